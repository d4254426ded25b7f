@testable import SecurOTPCore
import SecurOTPService
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// A second backend for tests, as the daemon's PostgreSQL one will be: the engine over rows
/// kept in dictionaries. Its own reading of the contract — no SQL — so running it beside the
/// SQLite store checks both the store's snapshot and writes and the contract itself.
/// `commit` applies a decision's writes all or nothing, with StateWrite's conditions.
final class MemoryBackend {
    struct Token: Equatable {
        var row: TokenRow
        var sealedSeed: [UInt8]
        var pinHash: [UInt8]?
    }

    struct FailureRow: Equatable {
        var state: UserState
        var lastFailure: Int64
    }

    struct RecoveryCode: Equatable {
        var hash: [UInt8]
        var used: Int64
    }

    /// Everything stored; a value, so a transaction works on a copy.
    struct Rows: Equatable {
        var tokens: [String: Token] = [:] // by serial
        var failures: [String: FailureRow] = [:] // by failure key
        var recoveryCodes: [String: [String: RecoveryCode]] = [:] // by user, then id
        // What the validator keeps besides (MemoryBackend+VerificationStorage.swift).
        var challenges: [String: PendingChallenge] = [:] // by id
        var reservations: [String: [String: OfflineReservation]] = [:] // by host, then serial
        var reservationUsers: [String: String] = [:] // "host serial" → user
        var audit: [AuditEntry] = []
    }

    var rows = Rows()
    let engine: VerificationEngine

    init(engine: VerificationEngine) {
        self.engine = engine
    }

    /// A copy of everything in `store`, deciding with the same data key.
    convenience init(copying store: Store) throws {
        self.init(engine: store.engine)
        let tokens = try store.db.prepare("SELECT \(Store.tokenColumns), sealed_seed, pin_hash FROM tokens")
        while try tokens.step() {
            var row = TokenRow()
            row.serial = tokens.text(0)
            row.user = tokens.text(1)
            row.kind = tokens.text(2)
            row.algorithm = tokens.text(3)
            row.digits = tokens.integer(4)
            row.period = tokens.integer(5)
            row.counter = tokens.integer(6)
            row.lastStep = tokens.integer(7)
            row.nickname = tokens.text(8)
            row.issuer = tokens.text(9)
            row.state = tokens.text(10)
            row.created = tokens.integer(11)
            row.lastUsed = tokens.integer(12)
            row.pinMode = tokens.text(13)
            row.hasPIN = tokens.integer(14) != 0
            row.pinLength = tokens.integer(15)
            row.pinChangeRequired = tokens.integer(16) != 0
            row.expires = tokens.integer(17)
            row.drift = tokens.integer(18)
            row.source = tokens.text(19)
            row.suite = tokens.text(20)
            rows.tokens[row.serial] = Token(row: row, sealedSeed: tokens.blob(21), pinHash: row.hasPIN ? tokens.blob(22) : nil)
        }
        let users = try store.db.prepare("SELECT name, failures, locked_until, last_failure FROM users")
        while try users.step() {
            rows.failures[users.text(0)] = FailureRow(state: UserState(failures: Int(users.integer(1)), lockedUntil: users.integer(2)),
                                                      lastFailure: users.integer(3))
        }
        let codes = try store.db.prepare("SELECT user, id, hash, used FROM recovery_codes")
        while try codes.step() {
            rows.recoveryCodes[codes.text(0), default: [:]][codes.text(1)] = RecoveryCode(hash: codes.blob(2), used: codes.integer(3))
        }
    }

    // MARK: the snapshot

    /// Active tokens that decode, oldest first, then by serial (byte order, as SQLite's BINARY).
    func activeTokens(user: String) -> [TokenSnapshot] {
        rows.tokens.values
            .filter { $0.row.user == user && $0.row.state == "active" }
            .sorted { a, b in
                a.row.created != b.row.created ? a.row.created < b.row.created : a.row.serial.utf8.lexicographicallyPrecedes(b.row.serial.utf8)
            }
            .compactMap { token in
                TokenRecord(row: token.row).map { TokenSnapshot(record: $0, sealedSeed: token.sealedSeed, pinHash: token.pinHash ?? []) }
            }
    }

    func failureState(_ key: String) -> UserState { rows.failures[key]?.state ?? .clear }

    func snapshot(user: String, failureKey: String) -> VerifySnapshot {
        let unused = (rows.recoveryCodes[user] ?? [:]).filter { $0.value.used == 0 }.map { RecoveryCodeRow(id: $0.key, hash: $0.value.hash) }
        return VerifySnapshot(failures: failureState(failureKey), tokens: activeTokens(user: user), recoveryCodes: unused)
    }

    // MARK: writes

    /// Applies `writes` in order to a copy and keeps it only if every write found the row it
    /// expected: a transaction that rolls back on the first conflict.
    func commit(_ writes: [StateWrite]) throws(StoreError) {
        var copy = rows
        for write in writes {
            guard Self.apply(write, to: &copy) else { throw write.conflict }
        }
        rows = copy
    }

    /// One write under its condition; false when the row is not as the snapshot held it.
    static func apply(_ write: StateWrite, to rows: inout Rows) -> Bool {
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

    func verify(user: String, input: [UInt8], codeAtEnd: Bool, policy: VerifyPolicy, now: Int64, failureKey: String?,
                countsFailure: Bool, challenge: String?) throws(StoreError) -> VerifyResult {
        let decision = try input.withUnsafeBufferPointer { (input) throws(StoreError) in
            try engine.verify(snapshot(user: user, failureKey: failureKey ?? user), user: user, input: input, codeAtEnd: codeAtEnd,
                              policy: policy, now: now, failureKey: failureKey, countsFailure: countsFailure, challenge: challenge)
        }
        try commit(decision.writes)
        return decision.result
    }

    func verifyNextCode(user: String, serial: String, position: Int64, input: [UInt8], policy: VerifyPolicy,
                        now: Int64) throws(StoreError) -> VerifyResult {
        let decision = try input.withUnsafeBufferPointer { (input) throws(StoreError) in
            try engine.verifyNextCode(snapshot(user: user, failureKey: user), user: user, serial: serial, position: position,
                                      input: input, policy: policy, now: now)
        }
        try commit(decision.writes)
        return decision.result
    }

    func resync(user: String, serial: String, first: [UInt8], second: [UInt8], now: Int64) throws(StoreError) -> ResyncResult {
        let decision = try engine.resync(activeTokens(user: user), user: user, serial: serial, first: first, second: second, now: now)
        try commit(decision.writes)
        return decision.result
    }

    /// The token as `Store.token(user:serial:)` finds it: any state, decoded.
    func record(user: String, serial: String) throws(StoreError) -> TokenRecord {
        guard let token = rows.tokens[serial], token.row.user == user, let record = TokenRecord(row: token.row) else {
            throw StoreError.noSuchToken(user: user, serial: serial)
        }
        return record
    }

    func ocraSuite(user: String, now: Int64) -> OCRASuite? {
        VerificationEngine.challengeSuite(among: activeTokens(user: user).map { $0.record }, now: now)
    }

    func unlock(user: String, now: Int64) -> Bool {
        let wasLocked = failureState(user).isLocked(at: now)
        rows.failures[user] = nil
        return wasLocked
    }
}

extension MemoryBackend: ScenarioBackend {
    func setPINHash(user: String, serial: String, mode: PINMode, hash: [UInt8], length: Int) throws {
        try commit([.setPIN(user: user, serial: serial, mode: mode, hash: hash, length: length)])
    }

    func requirePIN(user: String, serial: String) throws { try commit([VerificationEngine.requirePIN(on: try record(user: user, serial: serial))]) }
    func clearPIN(user: String, serial: String) throws { try commit([VerificationEngine.clearPIN(on: try record(user: user, serial: serial))]) }

    func dump() throws -> StateDump {
        var dump = StateDump()
        func bytewise(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
        for serial in rows.tokens.keys.sorted(by: bytewise) {
            guard let token = rows.tokens[serial] else { continue }
            let r = token.row
            let columns: [String] = [r.serial, r.user, r.kind, r.algorithm, "\(r.digits)", "\(r.period)", "\(r.counter)", "\(r.lastStep)",
                                     r.nickname, r.issuer, r.state, "\(r.created)", "\(r.lastUsed)", r.pinMode, r.hasPIN ? "1" : "0",
                                     "\(r.pinLength)", r.pinChangeRequired ? "1" : "0", "\(r.expires)", "\(r.drift)", r.source, r.suite]
            dump.tokens.append(StateDump.Token(columns: columns, sealedSeed: token.sealedSeed, pinHash: token.pinHash))
        }
        for name in rows.failures.keys.sorted(by: bytewise) {
            guard let row = rows.failures[name] else { continue }
            dump.users.append([name, "\(row.state.failures)", "\(row.state.lockedUntil)", "\(row.lastFailure)"])
        }
        for user in rows.recoveryCodes.keys.sorted(by: bytewise) {
            let codes = rows.recoveryCodes[user] ?? [:]
            for id in codes.keys.sorted(by: bytewise) {
                guard let code = codes[id] else { continue }
                dump.recoveryCodes.append([user, id, "\(code.used)"])
                dump.recoveryHashes.append(code.hash)
            }
        }
        return dump
    }
}
