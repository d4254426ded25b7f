import SecurOTPCore

/// Per-user and per-group login methods (`securotp policy`, docs/configuration.md "Login
/// methods"), kept in `method_policies` (schema 8).
extension Store {
    /// A policy's subject: a user, or `@group`.
    public static func policySubject(group: String) -> String { "@" + group }

    /// The methods set for `subject` (a user name or `@group`), if any. A row that no longer
    /// parses (written by a newer securotp) is an error, not "no policy": fail closed.
    public func methodPolicy(_ subject: String) throws(StoreError) -> LoginMethods? {
        let statement = try db.prepare("SELECT methods FROM method_policies WHERE subject = ?")
        defer { statement.reset() }
        try statement.bind(.text(subject))
        guard try statement.step() else { return nil }
        let text = statement.text(0)
        guard let methods = LoginMethods(parsing: text) else {
            throw StoreError(.corrupt, "method policy of \(TerminalText.quoted(subject)) in \(paths.database) is unreadable (\(TerminalText.quoted(text))); set it again with securotp policy")
        }
        return methods
    }

    /// Every policy, subjects in order (groups, `@`, sort first).
    public func methodPolicies() throws(StoreError) -> [(subject: String, methods: String)] {
        let statement = try db.prepare("SELECT subject, methods FROM method_policies ORDER BY subject")
        var rows: [(subject: String, methods: String)] = []
        while try statement.step() { rows.append((subject: statement.text(0), methods: statement.text(1))) }
        return rows
    }

    public func setMethodPolicy(_ subject: String, _ methods: LoginMethods) throws(StoreError) {
        try db.prepare("INSERT INTO method_policies (subject, methods) VALUES (?1, ?2) ON CONFLICT(subject) DO UPDATE SET methods = ?2")
            .bind(.text(subject), .text(methods.text)).run()
    }

    /// Removes the policy of `subject`; whether there was one.
    public func clearMethodPolicy(_ subject: String) throws(StoreError) -> Bool {
        try db.prepare("DELETE FROM method_policies WHERE subject = ?").bind(.text(subject)).run()
        return db.changes == 1
    }

    /// The policies that can apply to `user`, member of `groups`: the user's own; without one,
    /// those of the groups that have one, in `groups`' order. `groups` is asked only when the
    /// user has no policy of their own and the store holds some (resolving group names costs
    /// NSS lookups on every login; a store without policies costs one indexed lookup). How
    /// they combine is the caller's: `loginMethods` below (local mode), MethodRules.methods on
    /// the validator, where groups only narrow its `methods=`. A `groups` that cannot answer
    /// throws: leaving a group out could only widen the methods.
    public func applicablePolicies(user: String, groups: () throws(StoreError) -> [String]) throws(StoreError)
        -> (own: LoginMethods?, groups: [(name: String, methods: LoginMethods)]) {
        // One indexed lookup for the common case, a store without policies.
        let any = try db.prepare("SELECT 1 FROM method_policies LIMIT 1")
        defer { any.reset() }
        guard try any.step() else { return (own: nil, groups: []) }
        if let own = try methodPolicy(user) { return (own: own, groups: []) }
        var groupPolicies: [(name: String, methods: LoginMethods)] = []
        for group in try groups() {
            if let methods = try methodPolicy(Self.policySubject(group: group)) { groupPolicies.append((name: group, methods: methods)) }
        }
        return (own: nil, groups: groupPolicies)
    }

    /// The methods `user` (member of `groups`) may use, in order: LoginMethods.resolve over the
    /// user's policy, the groups' and `global`. Nil: no method is left (group policies without
    /// a method in common).
    public func loginMethods(user: String, groups: () throws(StoreError) -> [String], global: LoginMethods?) throws(StoreError) -> LoginMethods? {
        let policies = try applicablePolicies(user: user, groups: groups)
        return LoginMethods.resolve(user: policies.own, groups: policies.groups, global: global)
    }
}
