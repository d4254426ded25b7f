@testable import SecurOTPCore
import SecurOTPService
@testable import SecurOTPEngine
@testable import SecurOTPStore
import TestSupport

extension MemoryBackend {
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
}

extension MemoryBackend: ScenarioBackend {
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
