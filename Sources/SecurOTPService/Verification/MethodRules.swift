import Foundation
import SecurOTPCore
import SecurOTPStore

/// The validator enforces a user's login methods itself (docs/configuration.md, "Login
/// methods"): preflight tells a host the order, but a host may skip it, so `/v1/verify`
/// (otp), `/v1/push` (push) and `/v1/fido/challenge` (fido) each ask this one rule. A method
/// the user may not use is answered exactly as for a user without that kind of credential
/// (no token, no device, no security key): the host cannot tell a policy from an empty store;
/// only the audit log says why.
public enum MethodRules {
    /// Why `method` is refused for a user whose methods are `methods` (nil: none left, as
    /// group policies with no method in common leave), as the audit detail; nil: allowed.
    public static func refusal(_ method: LoginMethod, _ methods: LoginMethods?) -> String? {
        guard let methods else {
            return "\(method.rawValue) refused: the user's policies leave no login method (securotp policy)"
        }
        guard !methods.allows(method) else { return nil }
        return "\(method.rawValue) refused: not among the user's login methods (\(methods.text); securotp policy)"
    }

    /// The methods the validator applies (docs/configuration.md, "Login methods", remote mode):
    /// the user's own policy; else `methods=` (or the standard order) narrowed by the policies
    /// of the groups the host named — combined as in local mode (only what all allow, in the
    /// first group's order by name), then only what `methods=` allows too. Groups are the host's
    /// word, so they may only take methods away: calls that name no group (verify, push, a key
    /// challenge) are checked against the wider order, which the preflight's never exceeds.
    /// Nil: no method left.
    public static func methods(own: LoginMethods?, groups: [(name: String, methods: LoginMethods)], global: LoginMethods?) -> LoginMethods? {
        if let own { return own }
        let base = global ?? .standard
        guard !groups.isEmpty else { return base }
        guard let fromGroups = LoginMethods.resolve(user: nil, groups: groups, global: nil) else { return nil }
        return fromGroups.intersected(with: base)
    }

    /// Groups a preflight may name. The body limit of host requests (64 KiB) binds first for
    /// long names: 1024 groups fit with names of up to about 60 bytes; the module refuses a
    /// larger preflight itself, with a log line (docs/design.md, "Login methods in remote mode").
    public static let maxGroups = 1024

    /// The names among `groups` that can carry a policy (a name `securotp policy @GROUP` would
    /// refuse has none, and is skipped); more than `maxGroups` are refused, never cut short
    /// (a group left out could only widen the answer).
    public static func policyGroups(_ groups: [String]?) throws(ServiceError) -> [String] {
        guard let groups else { return [] }
        guard groups.count <= maxGroups else { throw ServiceError(.invalidInput, "groups: at most \(maxGroups) names") }
        return groups.filter { (try? RequestRules.user($0)) != nil }
    }

    /// Preflight's `methods`: the order when an admin set one, `[]` when none is left, absent
    /// for the standard order (the host's own `methods=` applies).
    public static func preflightMethods(_ methods: LoginMethods?) -> [String]? {
        guard let methods else { return [] }
        return methods.explicit ? methods.order.map(\.rawValue) : nil
    }

    /// Whether the user may use otp: passcodes, and offline codes and offline push approvals,
    /// which are typed like passcodes (docs/push.md, "Offline approval"). The same as
    /// `refusal(.otp, methods) == nil`, without writing the refusal.
    public static func allowsPasscodes(_ methods: LoginMethods?) -> Bool { methods?.allows(.otp) ?? false }
}

/// A host call's look at the user's methods (TokenService.methodCheck).
public struct MethodCheck: Sendable {
    /// The user's methods on the validator; nil: none left.
    public var methods: LoginMethods?
    /// Why the call's method is refused (audited already); nil: allowed.
    public var refusal: String?
}

extension TokenService {
    /// The one check of the host routes: whether `user` may use `method`. A refusal is written
    /// to the audit log as `action` denied; the caller then answers as for a user without the
    /// credential.
    public func methodCheck(_ method: LoginMethod, user: String, caller: Caller, action: String) async throws(ServiceError) -> MethodCheck {
        let methods = try await loginMethods(user: user, caller: caller)
        let refusal = MethodRules.refusal(method, methods)
        if let refusal {
            await record(AuditEntry(caller, action, user: user, result: "denied", detail: refusal, time: clock.now()))
        }
        return MethodCheck(methods: methods, refusal: refusal)
    }
}
