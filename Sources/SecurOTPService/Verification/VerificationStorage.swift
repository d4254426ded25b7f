import SecurOTPCore
import SecurOTPStore

/// The storage contract of HostVerification, for a backend whose calls are synchronous (the
/// SQLite store, the tests' memory backend). PostgreSQL keeps the same contract with async
/// calls (`PostgresTokenService+Verify.swift`). docs/design.md, "Storage and exactly once".
///
/// Every method of one host call runs inside one section serialised on the user, and
/// `apply` is all or nothing with it: a conditional write that changes no row (another
/// decision came first) throws, and nothing of the call stays written.
public protocol VerificationStorage {
    /// Runs `body` in one section serialised on `user` (for SQLite: a transaction that holds
    /// the write lock); a throw rolls back everything it did.
    func serialised<R>(user: String, _ body: () throws(StoreError) -> R) throws(StoreError) -> R
    /// nil when the store knows `user` (an active token or an unused recovery code), else
    /// `Store.unresolvedUsersKey`, the failure row names it does not know share.
    func failureKey(user: String) throws(StoreError) -> String?
    /// The failure row `failureKey ?? user` and the rows `rows` names of `user`.
    func snapshot(user: String, failureKey: String?, rows: SnapshotRows) throws(StoreError) -> VerifySnapshot
    /// Deletes and returns the challenge: nil when unknown, expired, or issued to another
    /// user or host. Taken once, whoever asks.
    func takeChallenge(id: String, user: String, host: String, now: Int64) throws(StoreError) -> PendingChallenge?
    /// One token of the user in any state; nil when there is none.
    func token(user: String, serial: String) throws(StoreError) -> TokenRecord?
    /// The host's offline reservations for the user, after moving them past what it used offline.
    func reserve(host: String, user: String, withdrawing used: [OfflineUsage]) throws(StoreError) -> [OfflineReservation]
    /// Applies the call's changes: offline reservations, then the engine's writes, the
    /// challenge and the audit entry.
    func apply(_ changes: HostChanges, host: String, user: String) throws(StoreError)
}

extension VerificationStorage {
    /// Read, decide, apply: one verify call.
    public func verify(_ call: VerifyCall, engine: VerificationEngine, policy: VerifyPolicy, now: Int64) throws(StoreError) -> VerifyResponse {
        try serialised(user: call.user) { () throws(StoreError) -> VerifyResponse in
            let failureKey = try self.failureKey(user: call.user)
            var reads = VerifyReads(failureKey: failureKey, snapshot: try snapshot(user: call.user, failureKey: failureKey, rows: call.rows))
            if let id = call.challengeID { reads.challenge = try takeChallenge(id: id, user: call.user, host: call.caller.name, now: now) }
            if call.keepsOfflineCodes { reads.reservations = try reserve(host: call.caller.name, user: call.user, withdrawing: call.offlineUsed) }
            let outcome = try HostVerification.verify(call, reads, engine: engine, policy: policy, now: now)
            try apply(outcome.changes, host: call.caller.name, user: call.user)
            return outcome.response
        }
    }

    /// Read, decide, apply: one answer to a dialogue step.
    public func answer(_ call: AnswerCall, engine: VerificationEngine, policy: VerifyPolicy, now: Int64) throws(StoreError) -> VerifyResponse {
        try serialised(user: call.user) { () throws(StoreError) -> VerifyResponse in
            var reads = AnswerReads(challenge: try takeChallenge(id: call.challengeID, user: call.user, host: call.caller.name, now: now))
            if let pending = reads.challenge {
                switch HostVerification.reads(answering: pending, input: call.input) {
                case .snapshot(let rows): reads.snapshot = try snapshot(user: call.user, failureKey: nil, rows: rows)
                case .token(let serial): reads.pinToken = try token(user: call.user, serial: serial)
                case .nothing: break
                }
            }
            let outcome = try HostVerification.answer(call, reads, engine: engine, policy: policy, now: now)
            try apply(outcome.changes, host: call.caller.name, user: call.user)
            return outcome.response
        }
    }

    /// The preflight of `user`: an OCRA challenge issued and charged under the user's lock.
    /// `passcodesAllowed`: otp is among the user's methods; else no OCRA challenge is issued
    /// (nor charged), as for a user without an OCRA token (MethodRules).
    public func preflight(user: String, caller: Caller, engine: VerificationEngine, policy: VerifyPolicy,
                          active: [TokenRecord], passcodesAllowed: Bool, now: Int64) throws(StoreError) -> PreflightResponse {
        var (response, issuesChallenge) = HostVerification.preflight(active: active, now: now)
        guard issuesChallenge, passcodesAllowed else { return response }
        return try serialised(user: user) { () throws(StoreError) -> PreflightResponse in
            let snapshot = try snapshot(user: user, failureKey: nil, rows: .tokens)
            guard let (offer, changes) = try HostVerification.offerChallenge(snapshot, user: user, caller: caller, engine: engine,
                                                                              policy: policy, now: now) else { return response }
            try apply(changes, host: caller.name, user: user)
            response.ocraChallenge = offer
            return response
        }
    }
}
