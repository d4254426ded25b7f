import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Admin operations on tokens: the same rules as the SQLite store (NewToken, InputRules,
/// TokenSerial, RecoveryCodes, the engine's PIN and resync decisions), PostgreSQL's SQL.
extension PostgresTokenService {
    public func enroll(user: String, _ request: EnrollRequest, caller: Caller) async throws(ServiceError) -> EnrollResponse {
        let user = try RequestRules.user(user)
        let token = try NewTokens.enrolled(request)
        let record = try await add([token], user: user, caller: caller, action: "enroll")[0]
        return EnrollResponse(token: TokenInfo(record), secret: Base32.encode(token.seed))
    }

    public func importTokens(user: String, _ request: ImportRequest, caller: Caller) async throws(ServiceError) -> TokenList {
        let user = try RequestRules.user(user)
        let tokens = try NewTokens.imported(request, bindingID: BindingID.derive(hostSecret: keys.hostSecret, user: user), now: self.now())
        return TokenList(tokens: try await add(tokens, user: user, caller: caller, action: "import").map { TokenInfo($0) })
    }

    /// Adds tokens for one user in one transaction: all or none, within `max_tokens`, with
    /// serials unique across users, seeds sealed to user and serial.
    private func add(_ tokens: [NewToken], user: String, caller: Caller, action: String) async throws(ServiceError) -> [TokenRecord] {
        let now = self.now()
        do throws(StoreError) { try NewToken.check(tokens, user: user, now: now) } catch { throw ServiceError(error) }
        let maxTokens = settings.maxTokens
        let sendable = UncheckedSendable(tokens)
        return try await transaction("adding tokens for \(user)") { connection in
            try await self.lock(user, connection)
            var existing = 0
            for try await count in try await connection.query("SELECT count(*) FROM tokens WHERE \"user\" = \(user)", logger: self.logger).decode(Int64.self) {
                existing = Int(count)
            }
            guard existing + sendable.value.count <= maxTokens else {
                throw ServiceError(.limit, "\(user) has \(existing) tokens and \(sendable.value.count) more would pass the limit of \(maxTokens); delete some with: securotp delete \(user) SERIAL, or raise max_tokens")
            }
            var records: [TokenRecord] = []
            for token in sendable.value {
                let serial = try await self.serial(for: token, connection)
                let sealed = try SeedSealing.seal(token.seed, key: self.keys.dataKey, user: user, serial: serial)
                let p = token.parameters
                try await connection.query("""
                    INSERT INTO tokens (serial, "user", kind, algorithm, digits, period, counter, sealed_seed, nickname, issuer,
                                        created, pin_mode, expires, source, suite)
                    VALUES (\(serial), \(user), \(token.kind.rawValue), \(p.algorithm.name), \(Int64(p.digits)), \(Int64(p.period)),
                            \(Int64(bitPattern: p.counter)), \(Self.bytea(sealed)), \(token.nickname), \(token.issuer), \(now), \(token.pinMode.rawValue),
                            \(token.expires), \(token.source), \(token.suite))
                    """, logger: self.logger)
                let record = token.record(serial: serial, user: user, created: now)
                records.append(record)
                try await self.append(AuditEntry(caller, action, user: user, serial: serial,
                                                 detail: action == "enroll" ? token.kind.rawValue : token.source, time: now), connection)
            }
            return records
        }
    }

    /// The issuer's serial if no token has it yet, or a fresh random one.
    private func serial(for token: NewToken, _ connection: PostgresConnection) async throws -> String {
        if let given = token.serial {
            try TokenSerial.check(given)
            for try await owner in try await connection.query("SELECT \"user\" FROM tokens WHERE serial = \(given)", logger: logger).decode(String.self) {
                throw StoreError(.invalidInput, "token serial \(given) is already enrolled (user \(owner)); delete it first if it moves")
            }
            return given
        }
        return try await freshSerial(connection)
    }

    /// A random serial no token has.
    func freshSerial(_ connection: PostgresConnection) async throws -> String {
        for _ in 0..<16 {
            guard let serial = TokenSerial.random() else { throw StoreError(.system, "no randomness available") }
            var taken = false
            for try await _ in try await connection.query("SELECT 1 FROM tokens WHERE serial = \(serial)", logger: logger) { taken = true }
            if !taken { return serial }
        }
        throw StoreError(.system, "could not find a free serial number")
    }

    public func tokens(user: String?, caller: Caller) async throws(ServiceError) -> TokenList {
        if let user { _ = try RequestRules.user(user) }
        let now = self.now()
        return try await run("listing tokens") { connection in
            let locked = Set(try await self.lockedUsers(now: now, connection))
            return TokenList(tokens: try await self.tokens(user: user, connection).map { TokenInfo($0, userLocked: locked.contains($0.user)) })
        }
    }

    func lockedUsers(now: Int64, _ connection: PostgresConnection) async throws -> [String] {
        var names: [String] = []
        for try await name in try await connection.query("SELECT name FROM users WHERE locked_until > \(now) ORDER BY name", logger: logger).decode(String.self) {
            names.append(name)
        }
        return names
    }

    public func setNickname(user: String, serial: String, _ request: NicknameRequest, caller: Caller) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        do throws(StoreError) { try InputRules.validate(nickname: request.nickname) } catch { throw ServiceError(error) }
        try await change(user: user, serial: serial, action: "nickname", caller: caller) { connection in
            try await connection.query("UPDATE tokens SET nickname = \(request.nickname) WHERE \"user\" = \(user) AND serial = \(serial) RETURNING 1",
                                       logger: self.logger)
        }
    }

    public func deleteToken(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try await change(user: user, serial: serial, action: "delete", caller: caller) { connection in
            try await connection.query("DELETE FROM offline_grants WHERE \"user\" = \(user) AND serial = \(serial)", logger: self.logger)
            return try await connection.query("DELETE FROM tokens WHERE \"user\" = \(user) AND serial = \(serial) RETURNING 1", logger: self.logger)
        }
    }

    /// One statement that must change exactly the named token, audited.
    private func change(user: String, serial: String, action: String, caller: Caller,
                        _ statement: @escaping @Sendable (PostgresConnection) async throws -> PostgresRowSequence) async throws(ServiceError) {
        try await transaction("\(action) for \(user)") { connection in
            var changed = 0
            for try await _ in try await statement(connection) { changed += 1 }
            guard changed == 1 else { throw StoreError.noSuchToken(user: user, serial: serial) }
            try await self.append(AuditEntry(caller, action, user: user, serial: serial, time: self.now()), connection)
        }
    }

    public func reset(user: String, caller: Caller) async throws(ServiceError) -> ResetResponse {
        let user = try RequestRules.user(user)
        return try await transaction("resetting \(user)") { connection in
            try await self.lock(user, connection)
            var removed = 0
            for try await _ in try await connection.query("DELETE FROM tokens WHERE \"user\" = \(user) RETURNING 1", logger: self.logger) { removed += 1 }
            try await connection.query("DELETE FROM users WHERE name = \(user)", logger: self.logger)
            try await connection.query("DELETE FROM offline_grants WHERE \"user\" = \(user)", logger: self.logger)
            try await self.append(AuditEntry(caller, "reset", user: user, detail: "\(removed) tokens removed", time: self.now()), connection)
            return ResetResponse(removed: removed)
        }
    }

    public func unlock(user: String, caller: Caller) async throws(ServiceError) -> UnlockResponse {
        let user = try RequestRules.user(user)
        return try await transaction("unlocking \(user)") { connection in
            let now = self.now()
            try await self.lock(user, connection)
            let wasLocked = try await self.failures(user, connection).isLocked(at: now)
            try await connection.query("DELETE FROM users WHERE name = \(user)", logger: self.logger)
            try await self.append(AuditEntry(caller, "unlock", user: user, detail: wasLocked ? "was locked" : "was not locked", time: now), connection)
            return UnlockResponse(wasLocked: wasLocked)
        }
    }

    public func setPIN(user: String, serial: String, _ request: PINRequest, caller: Caller) async throws(ServiceError) {
        let pin = Array(request.pin.utf8)
        try await pinChange(user: user, serial: serial, action: "pin set", caller: caller) { (record) throws(StoreError) in
            try pin.withUnsafeBufferPointer { (bytes) throws(StoreError) in try VerificationEngine.setPIN(on: record, pin: bytes) }
        }
    }

    public func clearPIN(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await pinChange(user: user, serial: serial, action: "pin clear", caller: caller) { record in VerificationEngine.clearPIN(on: record) }
    }

    public func requirePIN(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await pinChange(user: user, serial: serial, action: "pin require", caller: caller) { record in VerificationEngine.requirePIN(on: record) }
    }

    private func pinChange(user: String, serial: String, action: String, caller: Caller,
                           _ decide: @escaping @Sendable (TokenRecord) throws(StoreError) -> StateWrite) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try await transaction("\(action) for \(user)") { connection in
            guard let record = try await self.tokens(user: user, connection).first(where: { $0.serial == serial }) else {
                throw StoreError.noSuchToken(user: user, serial: serial)
            }
            try await self.apply([try decide(record)], connection)
            try await self.append(AuditEntry(caller, action, user: user, serial: serial, time: self.now()), connection)
        }
    }

    public func resync(user: String, serial: String, _ request: ResyncRequest, caller: Caller) async throws(ServiceError) -> ResyncResponse {
        let user = try RequestRules.user(user)
        return try await transaction("resynchronising a token of \(user)") { connection in
            let now = self.now()
            try await self.lock(user, connection)
            let decision = try self.engine.resync(try await self.activeTokens(user: user, connection), user: user, serial: serial,
                                                  first: Array(request.first.utf8), second: Array(request.second.utf8), now: now)
            try await self.apply(decision.writes, connection)
            try await self.append(AuditEntry(caller, "resync", user: user, serial: serial, detail: decision.result.description, time: now), connection)
            return ResyncResponse(decision.result)
        }
    }

    public func recoveryCodes(user: String, _ request: RecoveryCodesRequest, caller: Caller) async throws(ServiceError) -> RecoveryCodesResponse {
        let user = try RequestRules.user(user)
        let codes: [NewRecoveryCode]
        do throws(StoreError) { codes = try RecoveryCodes.generate(count: request.count ?? 10) } catch { throw ServiceError(error) }
        let rows = codes.map { ($0.id, $0.hash) }
        try await transaction("making recovery codes for \(user)") { connection in
            let now = self.now()
            try await self.lock(user, connection)
            try await connection.query("DELETE FROM recovery_codes WHERE \"user\" = \(user)", logger: self.logger)
            for (id, hash) in rows {
                try await connection.query("INSERT INTO recovery_codes (\"user\", id, hash, created) VALUES (\(user), \(id), \(Self.bytea(hash)), \(now))",
                                           logger: self.logger)
            }
            try await self.append(AuditEntry(caller, "recovery-codes", user: user, detail: "\(rows.count) codes", time: now), connection)
        }
        return RecoveryCodesResponse(user: user, codes: codes.map(\.code))
    }

    public func bindingID(user: String, caller: Caller) async throws(ServiceError) -> BindingIDResponse {
        let user = try RequestRules.user(user)
        return BindingIDResponse(user: user, bindingId: BindingID.derive(hostSecret: keys.hostSecret, user: user))
    }

    public func status(caller: Caller) async throws(ServiceError) -> StatusResponse {
        let now = self.now()
        return try await run("reading the status") { connection in
            var counts = (users: 0, tokens: 0, totp: 0, hotp: 0)
            for try await (users, tokens, totp, hotp) in try await connection.query("""
                SELECT count(DISTINCT "user"), count(*), count(*) FILTER (WHERE kind = 'totp'), count(*) FILTER (WHERE kind = 'hotp') FROM tokens
                """, logger: self.logger).decode((Int64, Int64, Int64, Int64).self) {
                counts = (Int(users), Int(tokens), Int(totp), Int(hotp))
            }
            return StatusResponse(store: "postgres", location: self.location, schemaVersion: Int64(PostgresSchema.currentVersion),
                                  users: counts.users, tokens: counts.tokens, totpTokens: counts.totp, hotpTokens: counts.hotp,
                                  lockedUsers: try await self.lockedUsers(now: now, connection))
        }
    }
}

/// Carries non-Sendable values (tokens with their seeds) into a transaction closure that runs
/// once, on this task.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
