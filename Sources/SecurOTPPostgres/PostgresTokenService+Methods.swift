import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Login methods per user and per group (`securotp policy`, docs/configuration.md "Login
/// methods"), kept in `method_policies` as in the SQLite store.
extension PostgresTokenService {
    public func loginMethods(user: String, caller: Caller) async throws(ServiceError) -> LoginMethods? {
        let user = try RequestRules.user(user)
        return try await run("reading the login methods of \(user)") { connection in try await self.loginMethods(user: user, groups: [], connection) }
    }

    /// The user's own policy, else `methods=` (or the standard order) narrowed by the policies
    /// of `groups`, the host's word (MethodRules.methods). One read for all of them, on
    /// `connection` (preflight reads them with the user's tokens).
    func loginMethods(user: String, groups: [String], _ connection: PostgresConnection) async throws -> LoginMethods? {
        let subjects = [user] + groups.map(Store.policySubject(group:))
        var texts: [String: String] = [:]
        for try await (subject, text) in try await connection.query("SELECT subject, methods FROM method_policies WHERE subject = ANY(\(subjects))",
                                                                    logger: logger).decode((String, String).self) {
            texts[subject] = text
        }
        // As in the SQLite store, the groups' rows are read only for a user without a policy of their own.
        let own = try Self.policy(user, texts[user])
        var policies: [(name: String, methods: LoginMethods)] = []
        if own == nil {
            for group in groups {
                let subject = Store.policySubject(group: group)
                if let methods = try Self.policy(subject, texts[subject]) { policies.append((name: group, methods: methods)) }
            }
        }
        return MethodRules.methods(own: own, groups: policies, global: settings.methods)
    }

    /// The user's methods from their own policy row as read (`ownPolicy`), else `methods=`:
    /// what `/v1/verify` applies, in the verification batch.
    func methods(user: String, ownPolicy: String?) throws(ServiceError) -> LoginMethods? {
        MethodRules.methods(own: try Self.policy(user, ownPolicy), groups: [], global: settings.methods)
    }

    /// The policy row of `subject` as stored (`text`; nil: none). A row that no longer parses
    /// (a newer securotp's) is an error, not "no policy": the caller fails closed.
    static func policy(_ subject: String, _ text: String?) throws(ServiceError) -> LoginMethods? {
        guard let text else { return nil }
        guard let methods = LoginMethods(parsing: text) else {
            throw ServiceError(.corrupt, "method policy of \(TerminalText.quoted(subject)) is unreadable (\(TerminalText.quoted(text))); set it again with securotp policy")
        }
        return methods
    }

    public func methodPolicies(caller: Caller) async throws(ServiceError) -> MethodPolicyList {
        try await run("reading the method policies") { connection in
            var policies: [MethodPolicyInfo] = []
            for try await (subject, methods) in try await connection.query("SELECT subject, methods FROM method_policies ORDER BY subject COLLATE \"C\"",
                                                                            logger: self.logger).decode((String, String).self) {
                policies.append(PolicyRules.info(subject: subject, text: methods))
            }
            return MethodPolicyList(policies: policies)
        }
    }

    public func setMethodPolicy(subject: String, _ request: MethodPolicyRequest, caller: Caller) async throws(ServiceError) -> MethodPolicyInfo {
        let subject = try PolicyRules.subject(subject)
        let text = try PolicyRules.methods(request).text
        return try await transaction("setting the method policy of \(subject)") { connection in
            try await connection.query("""
                INSERT INTO method_policies (subject, methods) VALUES (\(subject), \(text))
                ON CONFLICT (subject) DO UPDATE SET methods = EXCLUDED.methods
                """, logger: self.logger)
            try await self.append(AuditEntry(caller, "policy set", user: subject, result: "ok", detail: text, time: self.now()), connection)
            return PolicyRules.info(subject: subject, text: text)
        }
    }

    public func clearMethodPolicy(subject: String, caller: Caller) async throws(ServiceError) {
        let subject = try PolicyRules.subject(subject)
        let removed = try await transaction("removing the method policy of \(subject)") { connection -> Bool in
            guard try await self.changed("DELETE FROM method_policies WHERE subject = \(subject) RETURNING 1", connection) else { return false }
            try await self.append(AuditEntry(caller, "policy clear", user: subject, result: "ok", time: self.now()), connection)
            return true
        }
        guard removed else { throw ServiceError(.notFound, "\(subject) has no policy") }
    }
}
