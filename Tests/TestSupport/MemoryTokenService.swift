import Foundation
import SecurOTPCore
import SecurOTPEngine
import SecurOTPService
import SecurOTPStore

/// The memory backend behind the service facade, so that it answers the same host and admin
/// calls as `SQLiteTokenService` and `PostgresTokenService` (PipelineDifferentialTests): host
/// calls go through the one pipeline (`VerificationStorage`'s verify, answer and preflight),
/// tokens are added by the same rules (`NewTokens`, `NewToken.check`, `SeedSealing`), PINs,
/// unlocks and recovery codes by the engine's writes. What the differential does not call is
/// not supported (credentials, audit, resync, ...).
public final class MemoryTokenService: TokenService, @unchecked Sendable {
    public let backend: MemoryBackend
    private let dataKey: SecretBytes
    private let settings = Settings()
    private let lock = NSLock()
    public let clock: ServiceClock

    public init(clock: ServiceClock = .wall) throws {
        guard let key = SecretBytes.random(count: 32) else { throw ServiceError(.system, "no randomness available") }
        self.clock = clock
        dataKey = key
        backend = MemoryBackend(engine: VerificationEngine(dataKey: key))
    }

    public var storeKind: String { "memory" }

    private func now() -> Int64 { clock.now() }

    /// One call at a time, store errors as the other services report them.
    private func run<R>(_ body: () throws(StoreError) -> R) throws(ServiceError) -> R {
        lock.lock()
        defer { lock.unlock() }
        do { return try body() } catch { throw ServiceError(error) }
    }

    private static func unsupported(_ what: String) -> ServiceError {
        ServiceError(.notSupported, "\(what) is not part of the memory backend")
    }

    // MARK: hosts

    public func preflight(_ request: PreflightRequest, caller: Caller) async throws(ServiceError) -> PreflightResponse {
        let user = try RequestRules.user(request.user)
        return try run { () throws(StoreError) in
            let active = backend.rows.tokens.values.filter { $0.row.user == user && $0.row.state == TokenRecord.active }
                .compactMap { TokenRecord(row: $0.row) }
            return try backend.preflight(user: user, caller: caller, engine: backend.engine, policy: settings.policy, active: active,
                                         passcodesAllowed: true, now: self.now())
        }
    }

    public func verify(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let call = try VerifyCall(request, caller: caller)
        return try run { () throws(StoreError) in try backend.verify(call, engine: backend.engine, policy: settings.policy, now: self.now()) }
    }

    public func answer(_ request: AnswerRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let call = try AnswerCall(request, caller: caller)
        return try run { () throws(StoreError) in try backend.answer(call, engine: backend.engine, policy: settings.policy, now: self.now()) }
    }

    // MARK: tokens

    public func importTokens(user: String, _ request: ImportRequest, caller: Caller) async throws(ServiceError) -> TokenList {
        let user = try RequestRules.user(user)
        let now = self.now()
        let tokens = try NewTokens.imported(request, bindingID: "", now: now)
        return try run { () throws(StoreError) in
            try NewToken.check(tokens, user: user, now: now)
            var records: [TokenRecord] = []
            for token in tokens {
                guard let serial = token.serial ?? TokenSerial.random() else { throw StoreError(.system, "no randomness available") }
                guard backend.rows.tokens[serial] == nil else { throw StoreError(.invalidInput, "serial \(serial) is taken") }
                let record = token.record(serial: serial, user: user, created: now)
                let sealed = try SeedSealing.seal(token.seed, key: dataKey, user: user, serial: serial)
                backend.rows.tokens[serial] = MemoryBackend.Token(row: TokenRow(record), sealedSeed: sealed, pinHash: nil)
                records.append(record)
            }
            return TokenList(tokens: records.map { TokenInfo($0) })
        }
    }

    public func tokens(user: String?, caller: Caller) async throws(ServiceError) -> TokenList {
        let now = self.now()
        return try run { () throws(StoreError) in
            let records = backend.rows.tokens.values.filter { user == nil || $0.row.user == user }.compactMap { TokenRecord(row: $0.row) }
            return TokenList(tokens: records.map { TokenInfo($0, userLocked: backend.failureState($0.user).isLocked(at: now)) })
        }
    }

    public func unlock(user: String, caller: Caller) async throws(ServiceError) -> UnlockResponse {
        let user = try RequestRules.user(user)
        return try run { () throws(StoreError) in UnlockResponse(wasLocked: backend.unlock(user: user, now: self.now())) }
    }

    public func requirePIN(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try run { () throws(StoreError) in
            try backend.commit([VerificationEngine.requirePIN(on: try backend.record(user: user, serial: serial))])
        }
    }

    public func recoveryCodes(user: String, _ request: RecoveryCodesRequest, caller: Caller) async throws(ServiceError) -> RecoveryCodesResponse {
        let user = try RequestRules.user(user)
        return try run { () throws(StoreError) in
            let codes = try RecoveryCodes.generate(count: request.count ?? 10)
            backend.rows.recoveryCodes[user] = Dictionary(uniqueKeysWithValues: codes.map { ($0.id, MemoryBackend.RecoveryCode(hash: $0.hash, used: 0)) })
            return RecoveryCodesResponse(user: user, codes: codes.map(\.code))
        }
    }

    // MARK: not part of the memory backend

    public func enroll(user: String, _ request: EnrollRequest, caller: Caller) async throws(ServiceError) -> EnrollResponse { throw Self.unsupported("enroll") }
    public func setNickname(user: String, serial: String, _ request: NicknameRequest, caller: Caller) async throws(ServiceError) { throw Self.unsupported("nickname") }
    public func deleteToken(user: String, serial: String, caller: Caller) async throws(ServiceError) { throw Self.unsupported("delete") }
    public func reset(user: String, caller: Caller) async throws(ServiceError) -> ResetResponse { throw Self.unsupported("reset") }
    public func setPIN(user: String, serial: String, _ request: PINRequest, caller: Caller) async throws(ServiceError) { throw Self.unsupported("pin set") }
    public func clearPIN(user: String, serial: String, caller: Caller) async throws(ServiceError) { throw Self.unsupported("pin clear") }
    public func resync(user: String, serial: String, _ request: ResyncRequest, caller: Caller) async throws(ServiceError) -> ResyncResponse { throw Self.unsupported("resync") }
    public func bindingID(user: String, caller: Caller) async throws(ServiceError) -> BindingIDResponse { throw Self.unsupported("binding-id") }
    public func status(caller: Caller) async throws(ServiceError) -> StatusResponse { throw Self.unsupported("status") }
    public func addCredential(kind: CredentialKind, _ request: CredentialRequest, caller: Caller) async throws(ServiceError) -> CredentialCreated { throw Self.unsupported("credentials") }
    public func credentials(kind: CredentialKind, caller: Caller) async throws(ServiceError) -> CredentialList { throw Self.unsupported("credentials") }
    public func revokeCredential(kind: CredentialKind, name: String, caller: Caller) async throws(ServiceError) { throw Self.unsupported("credentials") }
    public func authenticate(credential: String, address: String) async throws(ServiceError) -> Caller { throw Self.unsupported("credentials") }
    public func audit(user: String?, limit: Int, caller: Caller) async throws(ServiceError) -> AuditList { throw Self.unsupported("audit") }
    public func record(_ entry: AuditEntry) async {}
    public func pruneAudit(before time: Int64) async throws(ServiceError) -> Int { throw Self.unsupported("audit") }
    public func checkHealth() async throws(ServiceError) {}
    public func close() async {}
}
