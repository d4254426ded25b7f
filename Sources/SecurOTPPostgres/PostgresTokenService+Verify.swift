import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Host calls: the engine decides on a snapshot — read in one statement, or in a transaction
/// under the user's advisory lock — and its writes, the challenge it may start and the audit
/// entry are applied together (PostgresWrites).
extension PostgresTokenService {
    public func preflight(_ request: PreflightRequest, caller: Caller) async throws(ServiceError) -> PreflightResponse {
        let user = try RequestRules.user(request.user)
        let groups = try MethodRules.policyGroups(request.groups)
        let now = self.now()
        let policy = settings.policy
        // With the groups the host named (MethodRules.methods), on the same connection.
        let (active, hasFido, methods, holds) = try await run("reading \(user)'s tokens and login methods") { connection in
            (try await self.tokens(user: user, connection).filter(\.isActive), try await !self.fidoCredentials(user: user, connection).isEmpty,
             try await self.loginMethods(user: user, groups: groups, connection), try await self.holdsFactor(user: user, connection))
        }
        var (preflight, issuesChallenge) = HostVerification.preflight(active: active, now: now)
        // A cloned credential counts too, as on SQLite (SQLiteTokenService.preflight): such a
        // user is asked for the key and denied, never let through by `nullok`.
        if hasFido { preflight.fido = true }
        preflight.methods = MethodRules.preflightMethods(methods)
        // Holding, not using: a blocked device or a cloned key keeps the user a holder.
        preflight.holdsFactor = holds
        let response = preflight
        let passcodesAllowed = MethodRules.allowsPasscodes(methods)
        // Without otp the module drops its offline cache (and the codes it used offline,
        // which only a verify would report), so the host's reservations go now: no code
        // typed offline can be accepted online once otp is allowed again.
        if !passcodesAllowed { try await dropOfflineGrants(host: caller.name, user: user) }
        // Without otp no OCRA challenge is issued (nor charged), as for a user without one.
        guard issuesChallenge, passcodesAllowed else { return response }
        // A user with an OCRA token: the challenge is issued here, charged as an attempt under
        // the user's lock, and stored for the verification that answers it.
        return try await transaction("issuing an OCRA challenge to \(user)") { connection in
            try await self.lock(user, connection)
            let snapshot = try await self.snapshot(user: user, failureKey: nil, rows: .tokens, connection)
            guard let (offer, changes) = try HostVerification.offerChallenge(snapshot, user: user, caller: caller, engine: self.engine,
                                                                              policy: policy, now: now) else { return response }
            try await self.apply(changes, host: caller.name, user: user, connection)
            var issued = response
            issued.ocraChallenge = offer
            return issued
        }
    }

    /// Deletes the offline codes reserved for `host` to use for `user` (otp refused).
    private func dropOfflineGrants(host: String, user: String) async throws(ServiceError) {
        try await run("dropping \(host)'s offline codes of \(user)") { connection in
            try await connection.query("DELETE FROM offline_grants WHERE host = \(host) AND \"user\" = \(user)", logger: self.logger)
        }
    }

    public func verify(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        var call = try VerifyCall(request, caller: caller)
        // The batch reads the user's policy with the tokens (MethodRules); a refused passcode is
        // then decided like any other, against no token.
        if call.readsTokensOnly, let response = try await verifyInBatch(call) {
            return response
        }
        call.passcodeRefusal = MethodRules.refusal(.otp, try await loginMethods(user: call.user, caller: caller))
        // Offline codes are passcodes: the host's reservations for the user go with otp
        // (docs/design.md, "Login methods in remote mode").
        if call.passcodeRefusal != nil { try await dropOfflineGrants(host: caller.name, user: call.user) }
        return try await verifyLocked(call)
    }

    /// The common case — codes of the user's tokens, no offline codes — in a batch with the
    /// verifications that arrive meanwhile (VerificationBatch): nil when it lost its race too
    /// often, and then the caller serialises under the user's advisory lock instead.
    private func verifyInBatch(_ call: VerifyCall) async throws(ServiceError) -> VerifyResponse? {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let job = VerificationJob(call: call, continuation: continuation)
                if verificationJobs.add(job) { Task { await self.runVerificationBatches() } }
            }
        } catch {
            throw failure(error, doing: "verifying a passcode of \(call.user)")
        }
    }

    /// Recovery codes, hosts that keep offline codes, answers to OCRA challenges and
    /// verifications that lost the race above too often: read, decide and write in one
    /// transaction under the user's advisory lock (the sequence VerificationStorage.verify runs).
    private func verifyLocked(_ call: VerifyCall) async throws(ServiceError) -> VerifyResponse {
        let policy = settings.policy
        return try await transaction("verifying a passcode of \(call.user)") { connection in
            let now = self.now()
            let failureKey = try await self.lockUser(call.user, connection)
            var reads = VerifyReads(failureKey: failureKey,
                                    snapshot: try await self.snapshot(user: call.user, failureKey: failureKey, rows: call.rows, connection))
            if let id = call.challengeID {
                reads.challenge = try await self.takeChallenge(id: id, user: call.user, host: call.caller.name, now: now, connection)
            }
            if call.keepsOfflineCodes {
                reads.reservations = try await self.reserve(host: call.caller.name, user: call.user, withdrawing: call.offlineUsed, connection)
            }
            let outcome = try HostVerification.verify(call, reads, engine: self.engine, policy: policy, now: now)
            try await self.apply(outcome.changes, host: call.caller.name, user: call.user, connection)
            return outcome.response
        }
    }

    public func answer(_ request: AnswerRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let call = try AnswerCall(request, caller: caller)
        let policy = settings.policy
        return try await transaction("answering a challenge of \(call.user)") { connection in
            let now = self.now()
            _ = try await self.lockUser(call.user, connection)
            var reads = AnswerReads(challenge: try await self.takeChallenge(id: call.challengeID, user: call.user, host: caller.name,
                                                                           now: now, connection))
            if let pending = reads.challenge {
                switch HostVerification.reads(answering: pending, input: call.input) {
                case .snapshot(let rows): reads.snapshot = try await self.snapshot(user: call.user, failureKey: nil, rows: rows, connection)
                case .token(let serial): reads.pinToken = try await self.tokens(user: call.user, connection).first { $0.serial == serial }
                case .nothing: break
                }
            }
            let outcome = try HostVerification.answer(call, reads, engine: self.engine, policy: policy, now: now)
            try await self.apply(outcome.changes, host: caller.name, user: call.user, connection)
            return outcome.response
        }
    }

    // MARK: storage (VerificationStorage's contract, async)

    /// The failure row `failureKey ?? user` and the rows `rows` names of `user`.
    func snapshot(user: String, failureKey: String?, rows: SnapshotRows, _ connection: PostgresConnection) async throws -> VerifySnapshot {
        let failures = try await self.failures(failureKey ?? user, connection)
        switch rows {
        case .tokens: return VerifySnapshot(failures: failures, tokens: try await activeTokens(user: user, connection))
        case .recoveryCodes: return VerifySnapshot(failures: failures, recoveryCodes: try await unusedRecoveryCodes(user: user, connection))
        }
    }

    /// Offline reservations, then the engine's writes, the challenge and the audit entry (one
    /// statement: a conflicting write raises and the transaction rolls back).
    func apply(_ changes: HostChanges, host: String, user: String, _ connection: PostgresConnection) async throws {
        if let consumed = changes.consumed { try await consume(host: host, consumed.reservation, expectedFirst: consumed.expectedFirst, connection) }
        if let refill = changes.refill { try await save(host: host, user: user, refill, connection) }
        try await apply(changes.writes, challenge: changes.challenge, audit: changes.audit, connection)
    }

    /// Takes the user's advisory lock, and that of the shared row failures of unknown names
    /// count on (returned as the failure key) when the store knows nothing of the user.
    private func lockUser(_ user: String, _ connection: PostgresConnection) async throws -> String? {
        try await lock(user, connection)
        for try await (known) in try await connection.query("""
            SELECT EXISTS (SELECT 1 FROM tokens WHERE "user" = \(user) AND state = 'active')
                OR EXISTS (SELECT 1 FROM recovery_codes WHERE "user" = \(user) AND used = 0)
            """, logger: logger).decode(Bool.self) where known {
            return nil
        }
        try await lock(Store.unresolvedUsersKey, connection)
        return Store.unresolvedUsersKey
    }

    // MARK: offline reservations

    /// The host's offline reservations for the user, after moving them past what it used offline.
    func reserve(host: String, user: String, withdrawing used: [OfflineUsage], _ connection: PostgresConnection) async throws -> [OfflineReservation] {
        try await withdraw(host: host, user: user, usage: used, connection)
        var reservations: [OfflineReservation] = []
        for try await (serial, first, last) in try await connection.query(
            "SELECT serial, first, last FROM offline_grants WHERE host = \(host) AND \"user\" = \(user) ORDER BY serial", logger: logger
        ).decode((String, Int64, Int64).self) {
            reservations.append(OfflineReservation(serial: serial, first: first, last: last))
        }
        return reservations
    }

    func withdraw(host: String, user: String, usage: [OfflineUsage], _ connection: PostgresConnection) async throws {
        for used in usage {
            try await connection.query("""
                UPDATE offline_grants SET first = \(used.nextUnused)
                WHERE host = \(host) AND "user" = \(user) AND serial = \(used.serial) AND first < \(used.nextUnused)
                """, logger: logger)
        }
    }

    func consume(host: String, _ consumed: OfflineReservation, expectedFirst: Int64, _ connection: PostgresConnection) async throws {
        var changed = 0
        for try await _ in try await connection.query("""
            UPDATE offline_grants SET first = \(consumed.first) WHERE host = \(host) AND serial = \(consumed.serial) AND first = \(expectedFirst)
            RETURNING 1
            """, logger: logger) { changed += 1 }
        guard changed == 1 else { throw StoreError(.database, "offline codes of token \(consumed.serial) changed during verification; try again") }
    }

    func save(host: String, user: String, _ reservation: OfflineReservation, _ connection: PostgresConnection) async throws {
        try await connection.query("""
            INSERT INTO offline_grants (host, serial, "user", first, last)
            VALUES (\(host), \(reservation.serial), \(user), \(reservation.first), \(reservation.last))
            ON CONFLICT (host, serial) DO UPDATE SET "user" = EXCLUDED."user", first = EXCLUDED.first, last = EXCLUDED.last
            """, logger: logger)
    }

    // MARK: challenges

    /// Deletes and returns the challenge: answered once, on whichever node.
    func takeChallenge(id: String, user: String, host: String, now: Int64, _ connection: PostgresConnection) async throws -> PendingChallenge? {
        let rows = try await connection.query("""
            DELETE FROM challenges WHERE id = \(id) AND "user" = \(user) AND host = \(host)
            RETURNING kind, serial, position, pin_mode, remaining, expires
            """, logger: logger)
        for try await (kind, serial, position, pinMode, remaining, expires) in rows.decode((String, String, Int64, String, Int64, Int64).self) {
            guard let kind = PendingKind(rawValue: kind), let pinMode = PINMode(rawValue: pinMode), expires > now else { return nil }
            return PendingChallenge(id: id, user: user, host: host, kind: kind, serial: serial, position: position, pinMode: pinMode,
                                    remaining: Int(clamping: remaining), expires: expires)
        }
        return nil
    }
}
