import SecurOTPCore
import SecurOTPService
import SecurOTPEngine
import SecurOTPStore

/// A second backend for tests, as the daemon's PostgreSQL one will be: the engine over rows
/// kept in dictionaries. Its own reading of the contract — no SQL — so running it beside the
/// SQLite store checks both the store's snapshot and writes and the contract itself.
/// `commit` applies a decision's writes all or nothing, with StateWrite's conditions.
public final class MemoryBackend {
    public struct Token: Equatable {
        public var row: TokenRow
        public var sealedSeed: [UInt8]
        public var pinHash: [UInt8]?

        public init(row: TokenRow, sealedSeed: [UInt8], pinHash: [UInt8]?) {
            self.row = row
            self.sealedSeed = sealedSeed
            self.pinHash = pinHash
        }
    }

    public struct FailureRow: Equatable {
        public var state: UserState
        public var lastFailure: Int64

        public init(state: UserState, lastFailure: Int64) {
            self.state = state
            self.lastFailure = lastFailure
        }
    }

    public struct RecoveryCode: Equatable {
        public var hash: [UInt8]
        public var used: Int64

        public init(hash: [UInt8], used: Int64) {
            self.hash = hash
            self.used = used
        }
    }

    /// Everything stored; a value, so a transaction works on a copy.
    public struct Rows: Equatable {
        public var tokens: [String: Token] = [:] // by serial
        public var failures: [String: FailureRow] = [:] // by failure key
        public var recoveryCodes: [String: [String: RecoveryCode]] = [:] // by user, then id
        // What the validator keeps besides (MemoryBackend+VerificationStorage.swift).
        public var challenges: [String: PendingChallenge] = [:] // by id
        public var reservations: [String: [String: OfflineReservation]] = [:] // by host, then serial
        public var reservationUsers: [String: String] = [:] // "host serial" → user
        public var audit: [AuditEntry] = []

        public init() {}
    }

    public var rows = Rows()
    public let engine: VerificationEngine

    public init(engine: VerificationEngine) {
        self.engine = engine
    }

    // MARK: the snapshot

    /// Active tokens that decode, oldest first, then by serial (byte order, as SQLite's BINARY).
    public func activeTokens(user: String) -> [TokenSnapshot] {
        rows.tokens.values
            .filter { $0.row.user == user && $0.row.state == "active" }
            .sorted { a, b in
                a.row.created != b.row.created ? a.row.created < b.row.created : a.row.serial.utf8.lexicographicallyPrecedes(b.row.serial.utf8)
            }
            .compactMap { token in
                TokenRecord(row: token.row).map { TokenSnapshot(record: $0, sealedSeed: token.sealedSeed, pinHash: token.pinHash ?? []) }
            }
    }

    public func failureState(_ key: String) -> UserState { rows.failures[key]?.state ?? .clear }

    public func snapshot(user: String, failureKey: String) -> VerifySnapshot {
        let unused = (rows.recoveryCodes[user] ?? [:]).filter { $0.value.used == 0 }.map { RecoveryCodeRow(id: $0.key, hash: $0.value.hash) }
        return VerifySnapshot(failures: failureState(failureKey), tokens: activeTokens(user: user), recoveryCodes: unused)
    }

    // MARK: writes

    /// Applies `writes` in order to a copy and keeps it only if every write found the row it
    /// expected: a transaction that rolls back on the first conflict.
    public func commit(_ writes: [StateWrite]) throws(StoreError) {
        var copy = rows
        for write in writes {
            guard Self.apply(write, to: &copy) else { throw write.conflict }
        }
        rows = copy
    }

    /// One write under its condition; false when the row is not as the snapshot held it.
    public static func apply(_ write: StateWrite, to rows: inout Rows) -> Bool {
        switch write {
        case .advanceStep(let serial, let from, let to, let drift, let lastUsed):
            guard var token = rows.tokens[serial], token.row.lastStep == from, to > from else { return false }
            token.row.lastStep = to
            token.row.lastUsed = lastUsed
            token.row.drift = drift
            rows.tokens[serial] = token
        case .advanceCounter(let serial, let from, let to, let lastUsed):
            guard var token = rows.tokens[serial], token.row.counter == from, to > from else { return false }
            token.row.counter = to
            token.row.lastUsed = lastUsed
            rows.tokens[serial] = token
        case .markUsed(let serial, let lastUsed):
            guard rows.tokens[serial] != nil else { return false }
            rows.tokens[serial]?.row.lastUsed = lastUsed
        case .spendRecoveryCode(let user, let id, let usedAt):
            guard let code = rows.recoveryCodes[user]?[id], code.used == 0 else { return false }
            rows.recoveryCodes[user]?[id]?.used = usedAt
        case .setFailures(let key, let expected, let to, let at):
            guard (rows.failures[key]?.state ?? .clear) == expected else { return false }
            rows.failures[key] = FailureRow(state: to, lastFailure: at)
        case .clearFailures(let key, let expected):
            guard let row = rows.failures[key], row.state == expected else { return false }
            rows.failures[key] = nil
        case .setPIN(let user, let serial, let mode, let hash, let length):
            guard var token = rows.tokens[serial], token.row.user == user else { return false }
            token.row.pinMode = mode.rawValue
            token.row.hasPIN = true
            token.pinHash = hash
            token.row.pinLength = Int64(length)
            token.row.pinChangeRequired = false
            rows.tokens[serial] = token
        case .clearPIN(let user, let serial):
            guard var token = rows.tokens[serial], token.row.user == user else { return false }
            token.row.pinMode = PINMode.none.rawValue
            token.row.hasPIN = false
            token.pinHash = nil
            token.row.pinLength = 0
            token.row.pinChangeRequired = false
            rows.tokens[serial] = token
        case .requirePIN(let user, let serial, let mode):
            guard var token = rows.tokens[serial], token.row.user == user else { return false }
            token.row.pinMode = mode.rawValue
            token.row.pinChangeRequired = true
            rows.tokens[serial] = token
        }
        return true
    }

    // MARK: the store's operations, on the engine

    public func verify(user: String, input: [UInt8], codeAtEnd: Bool, policy: VerifyPolicy, now: Int64, failureKey: String?,
                countsFailure: Bool, challenge: String?) throws(StoreError) -> VerifyResult {
        let decision = try input.withUnsafeBufferPointer { (input) throws(StoreError) in
            try engine.verify(snapshot(user: user, failureKey: failureKey ?? user), user: user, input: input, codeAtEnd: codeAtEnd,
                              policy: policy, now: now, failureKey: failureKey, countsFailure: countsFailure, challenge: challenge)
        }
        try commit(decision.writes)
        return decision.result
    }

    public func verifyNextCode(user: String, serial: String, position: Int64, input: [UInt8], policy: VerifyPolicy,
                        now: Int64) throws(StoreError) -> VerifyResult {
        let decision = try input.withUnsafeBufferPointer { (input) throws(StoreError) in
            try engine.verifyNextCode(snapshot(user: user, failureKey: user), user: user, serial: serial, position: position,
                                      input: input, policy: policy, now: now)
        }
        try commit(decision.writes)
        return decision.result
    }

    public func resync(user: String, serial: String, first: [UInt8], second: [UInt8], now: Int64) throws(StoreError) -> ResyncResult {
        let decision = try engine.resync(activeTokens(user: user), user: user, serial: serial, first: first, second: second, now: now)
        try commit(decision.writes)
        return decision.result
    }

    /// The token as `Store.token(user:serial:)` finds it: any state, decoded.
    public func record(user: String, serial: String) throws(StoreError) -> TokenRecord {
        guard let token = rows.tokens[serial], token.row.user == user, let record = TokenRecord(row: token.row) else {
            throw StoreError.noSuchToken(user: user, serial: serial)
        }
        return record
    }

    public func ocraSuite(user: String, now: Int64) -> OCRASuite? {
        VerificationEngine.challengeSuite(among: activeTokens(user: user).map { $0.record }, now: now)
    }

    public func unlock(user: String, now: Int64) -> Bool {
        let wasLocked = failureState(user).isLocked(at: now)
        rows.failures[user] = nil
        return wasLocked
    }

    // MARK: PINs, as the admin commands set them

    public func setPINHash(user: String, serial: String, mode: PINMode, hash: [UInt8], length: Int) throws {
        try commit([.setPIN(user: user, serial: serial, mode: mode, hash: hash, length: length)])
    }

    public func requirePIN(user: String, serial: String) throws { try commit([VerificationEngine.requirePIN(on: try record(user: user, serial: serial))]) }
    public func clearPIN(user: String, serial: String) throws { try commit([VerificationEngine.clearPIN(on: try record(user: user, serial: serial))]) }
}
