import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Host calls: the engine decides on a snapshot read under the user's advisory lock; its
/// writes, the challenge it may start and the audit entry commit together.
extension PostgresTokenService {
    public func preflight(_ request: PreflightRequest, caller: Caller) async throws(ServiceError) -> PreflightResponse {
        let user = try RequestRules.user(request.user)
        let now = Self.now()
        return try await run("reading \(user)'s tokens") { connection in
            let tokens = try await self.tokens(user: user, connection).filter { $0.state == "active" && !$0.isExpired(at: now) }
            return PreflightResponse(hasTokens: !tokens.isEmpty, ocraSuite: VerificationEngine.challengeSuite(among: tokens, now: now)?.text,
                                     codeDigits: Array(Set(tokens.filter { $0.kind != .ocra }.map(\.parameters.digits))).sorted())
        }
    }

    public func verify(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let user = try RequestRules.user(request.user)
        let input = try RequestRules.passcode(request.passcode)
        let policy = settings.policy
        let codeAtEnd = request.codeAtEnd ?? false
        return try await transaction("verifying a passcode of \(user)") { connection in
            let now = Self.now()
            let key = try await self.lockUser(user, connection)
            var snapshot = VerifySnapshot(failures: try await self.failures(key ?? user, connection))
            if input.withUnsafeBufferPointer({ VerificationEngine.readsRecoveryCodes(input: $0, codeAtEnd: codeAtEnd) }) {
                snapshot.recoveryCodes = try await self.unusedRecoveryCodes(user: user, connection)
            } else {
                snapshot.tokens = try await self.activeTokens(user: user, connection)
            }
            let decision = try input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try self.engine.verify(snapshot, user: user, input: bytes, codeAtEnd: codeAtEnd, policy: policy, now: now,
                                       failureKey: key, challenge: request.challenge)
            }
            try await self.apply(decision.writes, connection)
            let (response, pending) = try Dialogue.respond(to: decision.result, user: user, host: caller.name, stepsLeft: Dialogue.maxSteps, now: now)
            if let pending { try await self.insert(pending, connection) }
            try await self.append(Self.entry(caller, "verify", user: user, serial: response.serial ?? "", result: response.result.rawValue,
                                             detail: response.reason ?? "", now: now), connection)
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
            if let next { try await insert(next, connection) }
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
        }
        try await apply(decision.writes, connection)
        let (response, next) = try Dialogue.respond(to: decision.result, user: user, host: pending.host, stepsLeft: pending.remaining, now: now)
        if let next { try await insert(next, connection) }
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

    // MARK: challenges

    func insert(_ challenge: PendingChallenge, _ connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM challenges WHERE expires <= \(challenge.expires - PendingChallenge.lifetime)", logger: logger)
        try await connection.query("""
            INSERT INTO challenges (id, "user", host, kind, serial, position, pin_mode, remaining, expires)
            VALUES (\(challenge.id), \(challenge.user), \(challenge.host), \(challenge.kind.rawValue), \(challenge.serial), \(challenge.position),
                    \(challenge.pinMode.rawValue), \(Int64(challenge.remaining)), \(challenge.expires))
            """, logger: logger)
    }

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
