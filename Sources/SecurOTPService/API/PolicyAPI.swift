import SecurOTPStore

/// Login-method policies over the admin API (`securotp --server URL policy`, docs/configuration.md
/// "Login methods"): `GET /v1/policies`, `PUT` and `DELETE /v1/policies/{subject}`.

/// One policy: a user's (`alice`) or a group's (`@contractors`) methods, in order.
public struct MethodPolicyInfo: Codable, Sendable, Equatable {
    public var subject: String
    public var methods: [String]

    public init(subject: String, methods: [String]) {
        self.subject = subject
        self.methods = methods
    }
}

public struct MethodPolicyList: Codable, Sendable, Equatable {
    /// Subjects in order (groups, `@`, sort first).
    public var policies: [MethodPolicyInfo]

    public init(policies: [MethodPolicyInfo]) { self.policies = policies }
}

/// `PUT /v1/policies/{subject}`.
public struct MethodPolicyRequest: Codable, Sendable, Equatable {
    /// `fido`, `push`, `otp`, each at most once, at least one, in the order they are offered.
    public var methods: [String]

    public init(methods: [String]) { self.methods = methods }
}

/// What every store checks of a policy request.
public enum PolicyRules {
    /// A user name, or `@` and a group name (group names follow the rules of user names).
    public static func subject(_ subject: String) throws(ServiceError) -> String {
        if subject.hasPrefix("@") {
            _ = try RequestRules.user(String(subject.dropFirst()))
        } else {
            _ = try RequestRules.user(subject)
        }
        return subject
    }

    public static func methods(_ request: MethodPolicyRequest) throws(ServiceError) -> LoginMethods {
        guard request.methods.count <= LoginMethod.allCases.count, request.methods.allSatisfy({ !$0.contains(",") }),
              let methods = LoginMethods(parsing: request.methods.joined(separator: ",")) else {
            throw ServiceError(.invalidInput, "methods: \(LoginMethods.expectation)")
        }
        return methods
    }

    public static func info(subject: String, text: String) -> MethodPolicyInfo {
        MethodPolicyInfo(subject: subject, methods: text.split(separator: ",").map(String.init))
    }
}
