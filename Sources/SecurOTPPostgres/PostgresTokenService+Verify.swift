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
        let now = Self.now()
        let policy = settings.policy
        let (response, ocra) = try await run("reading \(user)'s tokens") { connection in
            let active = try await self.tokens(user: user, connection).filter { $0.state == "active" }
            return (PreflightResponse(hasTokens: !active.isEmpty, codeDigits: Preflight.codeDigits(active, now: now)),
                    VerificationEngine.challengeSuite(among: active, now: now) != nil)
        }
        guard ocra else { return response }
        // A user with an OCRA token: the challenge is issued here, charged as an attempt under
        // the user's lock, and stored for the verification that answers it.
        return try await transaction("issuing an OCRA challenge to \(user)") { connection in
            try await self.lock(user, connection)
            let snapshot = VerifySnapshot(failures: try await self.failures(user, connection), tokens: try await self.activeTokens(user: user, connection))
            guard let decision = try self.engine.issueChallenge(snapshot, user: user, policy: policy, now: now) else { return response }
            let (offer, pending) = try Preflight.offer(decision.result, user: user, host: caller.name, now: now)
            try await self.apply(decision.writes, challenge: pending, connection)
            var issued = response
            issued.ocraChallenge = offer
            return issued
        }
    }

    public func verify(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let user = try RequestRules.user(request.user)
        let input = try RequestRules.passcode(request.passcode)
        let codeAtEnd = request.codeAtEnd ?? false
        let recovery = input.withUnsafeBufferPointer { VerificationEngine.readsRecoveryCodes(input: $0, codeAtEnd: codeAtEnd) }
        let offlineHost = caller.kind == .host && caller.offlineCodes > 0
        if !recovery, !offlineHost, request.challengeId == nil,
           let response = try await verifyInBatch(request, user: user, input: input, caller: caller) {
            return response
        }
        return try await verifyLocked(request, user: user, input: input, recovery: recovery, caller: caller)
    }

    /// The common case — codes of the user's tokens, no offline codes — in a batch with the
    /// verifications that arrive meanwhile (VerificationBatch): nil when it lost its race too
    /// often, and then the caller serialises under the user's advisory lock instead.
    private func verifyInBatch(_ request: VerifyRequest, user: String, input: [UInt8], caller: Caller) async throws(ServiceError) -> VerifyResponse? {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let job = VerificationJob(user: user, input: input, codeAtEnd: request.codeAtEnd ?? false, caller: caller,
                                          continuation: continuation)
                if verificationJobs.add(job) { Task { await self.runVerificationBatches() } }
            }
        } catch {
            throw failure(error, doing: "verifying a passcode of \(user)")
        }
    }

    /// Recovery codes, hosts that keep offline codes, answers to OCRA challenges and
    /// verifications that lost the race above too often: read, decide and write in one
    /// transaction under the user's advisory lock.
    private func verifyLocked(_ request: VerifyRequest, user: String, input: [UInt8], recovery: Bool,
                              caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let policy = settings.policy
        let codeAtEnd = request.codeAtEnd ?? false
        return try await transaction("verifying a passcode of \(user)") { connection in
            let now = Self.now()
            let key = try await self.lockUser(user, connection)
            var ocra: (challenge: String?, charged: Bool) = (nil, false)
            if let id = request.challengeId {
                let pending = try await self.takeChallenge(id: id, user: user, host: caller.name, now: now, connection)
                ocra = Preflight.ocraChallenge(pending, tokens: pending == nil ? [] : try await self.tokens(user: user, connection))
            }
            var snapshot = VerifySnapshot(failures: try await self.failures(key ?? user, connection))
            if recovery {
                snapshot.recoveryCodes = try await self.unusedRecoveryCodes(user: user, connection)
            } else {
                snapshot.tokens = try await self.activeTokens(user: user, connection)
            }
            var offline: OfflineCodes?
            var reservations: [OfflineReservation] = []
            if caller.kind == .host, caller.offlineCodes > 0, !recovery {
                try await self.withdraw(host: caller.name, user: user, usage: request.offlineUsed ?? [], connection)
                reservations = try await self.reservations(host: caller.name, user: user, connection)
            }
            let reserved = try input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try OfflinePlan.reserved(self.engine, snapshot, reservations: reservations, input: bytes, codeAtEnd: codeAtEnd,
                                         failureKey: key ?? user, now: now)
            }
            let decision: VerificationEngine.Decision<VerifyResult>
            var acceptedAt: Int64?
            if let reserved {
                decision = .init(result: reserved.result, writes: reserved.writes)
                try await self.apply(decision.writes, connection)
                let previous = reservations.first { $0.serial == reserved.consumed.serial }
                try await self.consume(host: caller.name, reserved.consumed, expectedFirst: previous?.first ?? 0, connection)
                acceptedAt = reserved.consumed.first - 1
            } else {
                decision = try input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                    try self.engine.verify(snapshot, user: user, input: bytes, codeAtEnd: codeAtEnd, policy: policy, now: now,
                                           failureKey: key, challenge: ocra.challenge, charged: ocra.charged)
                }
                try await self.apply(decision.writes, connection)
                if case .accepted(let serial, _) = decision.result.outcome {
                    acceptedAt = OfflinePlan.acceptedPosition(serial: serial, in: decision.writes)
                }
            }
            if caller.kind == .host, caller.offlineCodes > 0, case .accepted(let serial, _) = decision.result.outcome, let acceptedAt,
               let token = snapshot.tokens.first(where: { $0.record.serial == serial }) {
                let counterNow = max(Int64(bitPattern: token.record.parameters.counter), acceptedAt + 1)
                if let refill = try OfflinePlan.refill(self.engine, token: token, acceptedAt: acceptedAt, counterNow: counterNow,
                                                       previous: reservations.first { $0.serial == serial }, count: caller.offlineCodes,
                                                       pepper: caller.credentialHash, now: now) {
                    try await self.save(host: caller.name, user: user, refill.reservation, connection)
                    if let write = refill.counterWrite { try await self.apply([write], connection) }
                    offline = refill.codes
                }
            }
            var (response, pending) = try Dialogue.respond(to: decision.result, user: user, host: caller.name, stepsLeft: Dialogue.maxSteps, now: now)
            response.offline = offline.map { [$0] }
            try await self.apply([], challenge: pending, audit: Self.entry(caller, "verify", user: user, serial: response.serial ?? "",
                                                                         result: response.result.rawValue, detail: response.reason ?? "",
                                                                         now: now), connection)
            return response
        }
    }

    public func answer(_ request: AnswerRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let user = try RequestRules.user(request.user)
        let input = try RequestRules.passcode(request.answer)
        let policy = settings.policy
        return try await transaction("answering a challenge of \(user)") { connection in
            let now = Self.now()
            _ = try await self.lockUser(user, connection)
            let response: VerifyResponse
            if let pending = try await self.takeChallenge(id: request.challengeId, user: user, host: caller.name, now: now, connection) {
                response = try await self.answer(pending, input: input, policy: policy, now: now, connection)
            } else {
                response = Dialogue.unknownChallenge
            }
            try await self.append(Self.entry(caller, "answer", user: user, serial: response.serial ?? "", result: response.result.rawValue,
                                             detail: response.reason ?? "", now: now), connection)
            return response
        }
    }

    private func answer(_ pending: PendingChallenge, input: [UInt8], policy: VerifyPolicy, now: Int64,
                        _ connection: PostgresConnection) async throws -> VerifyResponse {
        let user = pending.user
        let decision: VerificationEngine.Decision<VerifyResult>
        switch pending.kind {
        case .newPIN:
            let (response, next, setPIN) = try Dialogue.afterNewPIN(pending, pin: input, now: now)
            if setPIN {
                guard let record = try await tokens(user: user, connection).first(where: { $0.serial == pending.serial }) else {
                    throw StoreError.noSuchToken(user: user, serial: pending.serial)
                }
                let write = try input.withUnsafeBufferPointer { (pin) throws(StoreError) in try VerificationEngine.setPIN(on: record, pin: pin) }
                try await apply([write], connection)
            }
            try await apply([], challenge: next, connection)
            return response
        case .nextCode:
            let snapshot = VerifySnapshot(failures: try await failures(user, connection), tokens: try await activeTokens(user: user, connection))
            decision = try input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try engine.verifyNextCode(snapshot, user: user, serial: pending.serial, position: pending.position, input: bytes, policy: policy, now: now)
            }
        case .passcode:
            let snapshot = VerifySnapshot(failures: try await failures(user, connection), tokens: try await activeTokens(user: user, connection))
            decision = try input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try engine.verify(snapshot, user: user, input: bytes, codeAtEnd: false, policy: policy, now: now)
            }
        case .ocra:
            return Dialogue.unknownChallenge
        }
        let (response, next) = try Dialogue.respond(to: decision.result, user: user, host: pending.host, stepsLeft: pending.remaining, now: now)
        try await apply(decision.writes, challenge: next, connection)
        return response
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

    func reservations(host: String, user: String, _ connection: PostgresConnection) async throws -> [OfflineReservation] {
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
            guard let kind = ChallengeKind(rawValue: kind), let pinMode = PINMode(rawValue: pinMode), expires > now else { return nil }
            return PendingChallenge(id: id, user: user, host: host, kind: kind, serial: serial, position: position, pinMode: pinMode,
                                    remaining: Int(clamping: remaining), expires: expires)
        }
        return nil
    }
}
