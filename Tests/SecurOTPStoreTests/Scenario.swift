import Foundation
import Testing
import TestSupport
@testable import SecurOTPCore
@testable import SecurOTPSecurID
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// What a randomized scenario does to a backend. `SQLiteBackend` (the real store) and
/// `MemoryBackend` both answer it, so DifferentialTests can run them side by side.
protocol ScenarioBackend: AnyObject {
    func verify(user: String, input: [UInt8], codeAtEnd: Bool, policy: VerifyPolicy, now: Int64, failureKey: String?,
                countsFailure: Bool, challenge: String?) throws -> VerifyResult
    func verifyNextCode(user: String, serial: String, position: Int64, input: [UInt8], policy: VerifyPolicy, now: Int64) throws -> VerifyResult
    func resync(user: String, serial: String, first: [UInt8], second: [UInt8], now: Int64) throws -> ResyncResult
    /// A PIN from a ready hash: the scenario hashes with few iterations to stay fast.
    func setPINHash(user: String, serial: String, mode: PINMode, hash: [UInt8], length: Int) throws
    func requirePIN(user: String, serial: String) throws
    func clearPIN(user: String, serial: String) throws
    func unlock(user: String, now: Int64) throws -> Bool
    func ocraSuite(user: String, now: Int64) throws -> OCRASuite?
    func dump() throws -> StateDump
}

/// Every stored row, in one order; integers as SQLite spells them.
struct StateDump: Equatable {
    struct Token: Equatable {
        /// `Store.tokenColumns`, in order.
        var columns: [String]
        var sealedSeed: [UInt8]
        var pinHash: [UInt8]?

        var counter: Int64 { Int64(columns[6]) ?? 0 }
        var pinMode: PINMode { PINMode(rawValue: columns[13]) ?? .none }
        var hasPIN: Bool { columns[14] == "1" }
        var pinChangeRequired: Bool { columns[16] == "1" }
        var drift: Int64 { Int64(columns[18]) ?? 0 }
    }

    var tokens: [Token] = []
    /// name, failures, locked_until, last_failure
    var users: [[String]] = []
    /// user, id, used, and the hash
    var recoveryCodes: [[String]] = []
    var recoveryHashes: [[UInt8]] = []

    func token(_ serial: String) -> Token? { tokens.first { $0.columns[0] == serial } }
}

/// The real store, with commits that skip fsync (the scenario never crashes it).
final class SQLiteBackend: ScenarioBackend {
    let temp: TemporaryStore
    var store: Store { temp.store }

    init() throws {
        temp = try TemporaryStore()
        try temp.store.db.execute("PRAGMA synchronous = OFF")
    }

    func verify(user: String, input: [UInt8], codeAtEnd: Bool, policy: VerifyPolicy, now: Int64, failureKey: String?,
                countsFailure: Bool, challenge: String?) throws -> VerifyResult {
        try input.withUnsafeBufferPointer {
            try store.verify(user: user, input: $0, codeAtEnd: codeAtEnd, policy: policy, now: now, failureKey: failureKey,
                             countsFailure: countsFailure, challenge: challenge)
        }
    }

    func verifyNextCode(user: String, serial: String, position: Int64, input: [UInt8], policy: VerifyPolicy, now: Int64) throws -> VerifyResult {
        try input.withUnsafeBufferPointer { try store.verifyNextCode(user: user, serial: serial, position: position, input: $0, policy: policy, now: now) }
    }

    func resync(user: String, serial: String, first: [UInt8], second: [UInt8], now: Int64) throws -> ResyncResult {
        try store.resync(user: user, serial: serial, first: first, second: second, now: now)
    }

    func setPINHash(user: String, serial: String, mode: PINMode, hash: [UInt8], length: Int) throws {
        try store.apply(.setPIN(user: user, serial: serial, mode: mode, hash: hash, length: length))
    }

    func requirePIN(user: String, serial: String) throws { try store.requirePIN(user: user, serial: serial) }
    func clearPIN(user: String, serial: String) throws { try store.clearPIN(user: user, serial: serial) }
    func unlock(user: String, now: Int64) throws -> Bool { try store.unlock(user: user, now: now) }
    func ocraSuite(user: String, now: Int64) throws -> OCRASuite? { try store.ocraSuite(user: user, now: now) }

    func dump() throws -> StateDump {
        var dump = StateDump()
        let tokens = try store.db.prepare("SELECT \(Store.tokenColumns), sealed_seed, pin_hash, pin_hash IS NULL FROM tokens ORDER BY serial")
        while try tokens.step() {
            dump.tokens.append(StateDump.Token(columns: (0..<Store.tokenColumnCount).map { tokens.text($0) }, sealedSeed: tokens.blob(21),
                                               pinHash: tokens.integer(23) != 0 ? nil : tokens.blob(22)))
        }
        let users = try store.db.prepare("SELECT name, failures, locked_until, last_failure FROM users ORDER BY name")
        while try users.step() { dump.users.append((0..<4).map { users.text($0) }) }
        let codes = try store.db.prepare("SELECT user, id, used, hash FROM recovery_codes ORDER BY user, id")
        while try codes.step() {
            dump.recoveryCodes.append((0..<3).map { codes.text($0) })
            dump.recoveryHashes.append(codes.blob(3))
        }
        return dump
    }
}

/// A random sequence of logins and admin actions over a fixed set of users and tokens:
/// right codes (in and out of the window), wrong and replayed ones, PIN modes and new PINs,
/// next-tokencode dialogues, recovery codes, password+code, try_first_pass, unknown users,
/// resync, unlock, and a clock that jumps (also backwards). Each step runs on every backend
/// given; `trace` records what happened.
final class Scenario {
    struct Token {
        let user: String
        let serial: String
        let kind: TokenKind
        let seed: SecretBytes
        let digits: Int
        let period: Int
        let algorithm: HashAlgorithm
        let suite: OCRASuite?
    }

    enum Operation {
        case verify(user: String, input: [UInt8], codeAtEnd: Bool, failureKey: String?, countsFailure: Bool, challenge: String?)
        case nextCode(user: String, serial: String, position: Int64, input: [UInt8])
        case setPIN(user: String, serial: String, mode: PINMode, pin: [UInt8], hash: [UInt8])
        case requirePIN(user: String, serial: String)
        case clearPIN(user: String, serial: String)
        case resync(user: String, serial: String, first: [UInt8], second: [UInt8])
        case unlock(user: String)
    }

    static let t0: Int64 = 1_800_000_000
    static let users = ["ann", "ben", "cat", "dan", "eve", "zed"]
    var random: SplitMix64
    var now = Scenario.t0
    let policy: VerifyPolicy
    var tokens: [Token] = []
    /// Each token's PIN as the backends hold it.
    var pins: [String: [UInt8]] = [:]
    var recoveryCodes: [String: [[UInt8]]] = [:]
    var accepted: [(user: String, input: [UInt8], codeAtEnd: Bool, challenge: String?)] = []
    var pendingNextCode: (user: String, serial: String, position: Int64)?
    var pendingNewPIN: (user: String, serial: String)?
    var trace: [String] = []

    /// Enrolls the scenario's tokens, PINs, recovery codes and a few odd rows in `store`.
    init(seed: UInt64, store: Store) throws {
        random = SplitMix64(state: seed)
        var policy = VerifyPolicy()
        policy.window = random.pick([1, 1, 2])
        policy.hotpLookahead = random.pick([10, 3])
        policy.resyncWindow = random.pick([50, 50, 5, 0])
        policy.nextCodeAfter = random.pick([0, 0, 2])
        policy.deny = random.pick([5, 3, 0])
        policy.unlockTime = random.pick([600, 60, 0])
        self.policy = policy

        // Created out of serial order, so the engine's order (created, serial) matters.
        try enroll(store, "ann", "100000000009", .hotp, digits: 8, algorithm: .sha256, counter: 5, created: Self.t0 - 3000)
        try enroll(store, "ann", "100000000001", .totp, created: Self.t0 - 2000)
        // The same secret enrolled twice: which serial a code is accepted on depends on the order.
        try enroll(store, "ann", "100000000000", .totp, created: Self.t0 - 1000, sameSeedAs: "100000000001")
        try enroll(store, "ben", "000100000003", .securid, period: 60, pinMode: .prefix, created: Self.t0 - 2000)
        try enroll(store, "ben", "100000000004", .totp, digits: 7, period: 20, algorithm: .sha512, created: Self.t0 - 2000)
        try enroll(store, "cat", "000100000005", .securid, digits: 8, pinMode: .addedByToken, created: Self.t0 - 2000)
        try enroll(store, "cat", "100000000006", .hotp, created: Self.t0 - 1000)
        // Expires, so the suite the login's challenge is drawn from changes on the way.
        try enroll(store, "eve", "200000000001", .ocra, suite: "OCRA-1:HOTP-SHA1-6:C-QN08", expires: Self.t0 + 4000, created: Self.t0 - 2000)
        try enroll(store, "eve", "200000000002", .ocra, suite: "OCRA-1:HOTP-SHA256-8:QN08-T1M", created: Self.t0 - 2000)
        try enroll(store, "eve", "200000000003", .ocra, suite: "OCRA-1:HOTP-SHA1-6:QN08", created: Self.t0 - 2000)
        try enroll(store, "eve", "100000000007", .totp, expires: Self.t0 + 1500, created: Self.t0 - 2000)
        try setPIN(store, serial: "000100000003", Array("ab12".utf8), mode: .prefix)
        try setPIN(store, serial: "000100000005", Array("1234".utf8), mode: .addedByToken)
        // A disabled token, a row that does not decode, and a failure row from before.
        let disabled = try #require(SecretBytes.random(count: 20))
        _ = try store.add([NewToken(kind: .totp, parameters: OATHParameters(kind: .totp), seed: disabled, serial: "300000000001")],
                          user: "ben", maxTokens: 20, now: Self.t0 - 500)
        try store.db.execute("UPDATE tokens SET state = 'disabled' WHERE serial = '300000000001'")
        try store.db.execute("""
            INSERT INTO tokens (serial, user, kind, algorithm, digits, period, sealed_seed, created)
            VALUES ('300000000002', 'ann', 'bogus', 'SHA1', 6, 30, x'00', \(Self.t0 - 2500))
            """)
        try store.db.execute("INSERT INTO users (name, failures, locked_until, last_failure) VALUES ('ann', 1, 0, \(Self.t0 - 100))")
        try addRecoveryCodes(store, user: "ann", count: 2)
        try addRecoveryCodes(store, user: "dan", count: 3)
    }

    private func enroll(_ store: Store, _ user: String, _ serial: String, _ kind: TokenKind, digits: Int = 6, period: Int = 30,
                        algorithm: HashAlgorithm = .sha1, counter: UInt64 = 0, pinMode: PINMode = .none, suite: String = "",
                        expires: Int64 = 0, created: Int64, sameSeedAs: String? = nil) throws {
        let seed = tokens.first { $0.serial == sameSeedAs }?.seed ?? SecretBytes(copying: random.bytes(kind == .securid ? 16 : 20 + random.below(12)))
        let parsed = suite.isEmpty ? nil : try OCRASuite(suite)
        let parameters = OATHParameters(kind: kind == .hotp ? .hotp : .totp, algorithm: algorithm, digits: parsed?.digits ?? digits,
                                        period: period, counter: counter)
        _ = try store.add([NewToken(kind: kind, parameters: parameters, seed: seed, serial: serial, pinMode: pinMode, expires: expires,
                                    suite: suite)], user: user, maxTokens: 20, now: created)
        tokens.append(Token(user: user, serial: serial, kind: kind, seed: seed, digits: parameters.digits, period: period,
                            algorithm: algorithm, suite: parsed))
    }

    private func setPIN(_ store: Store, serial: String, _ pin: [UInt8], mode: PINMode) throws {
        let hash = try #require(pin.withUnsafeBufferPointer { SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) })
        try store.db.prepare("UPDATE tokens SET pin_mode = ?, pin_hash = ?, pin_length = ? WHERE serial = ?")
            .bind(.text(mode.rawValue), .blob(hash), .integer(Int64(pin.count)), .text(serial)).run()
        pins[serial] = pin
    }

    private func addRecoveryCodes(_ store: Store, user: String, count: Int) throws {
        for index in 0..<count {
            var code = (0..<12).map { _ in random.pick(RecoveryCodes.alphabet) }
            code.insert(UInt8(ascii: "-"), at: 8)
            code.insert(UInt8(ascii: "-"), at: 4)
            code[0] = RecoveryCodes.alphabet[index] // distinct ids
            let hash = try #require(code.withUnsafeBufferPointer { SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) })
            try store.db.prepare("INSERT INTO recovery_codes (user, id, hash, created) VALUES (?, ?, ?, ?)")
                .bind(.text(user), .text(String(decoding: code.prefix(4), as: UTF8.self)), .blob(hash), .integer(Self.t0 - 100)).run()
            recoveryCodes[user, default: []].append(code)
        }
    }

    // MARK: one step

    /// Advances the clock, picks an operation, runs it on every backend and checks that they
    /// answered alike and hold the same rows afterwards. False (with an Issue) when not.
    func step(_ backends: [any ScenarioBackend]) throws -> Bool {
        now += random.pick([0, 0, 1, 7, 29, 30, 30, 31, 60, 90, 300, -30, 1200])
        let before = try backends[0].dump()
        let operation = makeOperation(before)
        var answers: [(text: String, result: Any?)] = []
        for backend in backends { answers.append(run(operation, on: backend)) }
        let line = "\(trace.count) t0+\(now - Self.t0) \(describe(operation)) → \(answers[0].text)"
        trace.append(line)
        for (index, answer) in answers.enumerated().dropFirst() where answer.text != answers[0].text {
            Issue.record("backend \(index) answered differently at step \(line): \(answer.text)")
            return false
        }
        let after = try backends[0].dump()
        let suites = try Self.users.map { try backends[0].ocraSuite(user: $0, now: now) }
        for (index, backend) in backends.enumerated().dropFirst() {
            let other = try backend.dump()
            if other != after {
                Issue.record("backend \(index) holds other rows after step \(line):\n\(after)\nvs\n\(other)")
                return false
            }
            let otherSuites = try Self.users.map { try backend.ocraSuite(user: $0, now: now) }
            if otherSuites != suites {
                Issue.record("backend \(index) shows other challenges after step \(line): \(suites) vs \(otherSuites)")
                return false
            }
        }
        learn(from: operation, answers[0].result)
        return true
    }

    private func run(_ operation: Operation, on backend: any ScenarioBackend) -> (text: String, result: Any?) {
        do {
            switch operation {
            case .verify(let user, let input, let codeAtEnd, let failureKey, let countsFailure, let challenge):
                let result = try backend.verify(user: user, input: input, codeAtEnd: codeAtEnd, policy: policy, now: now, failureKey: failureKey,
                                                countsFailure: countsFailure, challenge: challenge)
                return (describe(result), result)
            case .nextCode(let user, let serial, let position, let input):
                let result = try backend.verifyNextCode(user: user, serial: serial, position: position, input: input, policy: policy, now: now)
                return (describe(result), result)
            case .setPIN(let user, let serial, let mode, let pin, let hash):
                try backend.setPINHash(user: user, serial: serial, mode: mode, hash: hash, length: pin.count)
                return ("PIN set", true)
            case .requirePIN(let user, let serial):
                try backend.requirePIN(user: user, serial: serial)
                return ("PIN required", true)
            case .clearPIN(let user, let serial):
                try backend.clearPIN(user: user, serial: serial)
                return ("PIN cleared", true)
            case .resync(let user, let serial, let first, let second):
                let result = try backend.resync(user: user, serial: serial, first: first, second: second, now: now)
                return ("resync \(result)", result)
            case .unlock(let user):
                return ("unlock: was locked \(try backend.unlock(user: user, now: now))", nil)
            }
        } catch let error as StoreError {
            return ("error \(error.code.rawValue): \(error.message)", nil)
        } catch {
            return ("error \(error)", nil)
        }
    }

    private func describe(_ result: VerifyResult) -> String {
        "\(result.outcome) failures \(result.failures)\(result.lockedNow ? " locked now" : "")\(result.userHasTokens ? "" : " no tokens")"
            + (result.note.isEmpty ? "" : " (\(result.note))")
    }

    private func describe(_ operation: Operation) -> String {
        func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
        switch operation {
        case .verify(let user, let input, let codeAtEnd, let failureKey, let countsFailure, let challenge):
            return "verify \(user) \"\(text(input))\"\(codeAtEnd ? " code-at-end" : "")\(failureKey.map { " key \($0)" } ?? "")"
                + "\(countsFailure ? "" : " uncounted")\(challenge.map { " challenge \($0)" } ?? "")"
        case .nextCode(let user, let serial, let position, let input): return "next code \(user) \(serial) after \(position) \"\(text(input))\""
        case .setPIN(let user, let serial, let mode, let pin, _): return "set PIN \(user) \(serial) \(mode) \"\(text(pin))\""
        case .requirePIN(let user, let serial): return "require PIN \(user) \(serial)"
        case .clearPIN(let user, let serial): return "clear PIN \(user) \(serial)"
        case .resync(let user, let serial, let first, let second): return "resync \(user) \(serial) \(text(first)) \(text(second))"
        case .unlock(let user): return "unlock \(user)"
        }
    }

    /// What the answer means for the next steps: codes to replay, dialogues to continue, PINs.
    private func learn(from operation: Operation, _ result: Any?) {
        switch operation {
        case .verify(let user, let input, let codeAtEnd, _, _, let challenge):
            guard let result = result as? VerifyResult else { return }
            remember(user: user, input: input, codeAtEnd: codeAtEnd, challenge: challenge, result)
        case .nextCode(let user, _, _, let input):
            guard let result = result as? VerifyResult else { return }
            remember(user: user, input: input, codeAtEnd: false, challenge: nil, result)
        case .setPIN(_, let serial, _, let pin, _):
            if result != nil { pins[serial] = pin }
        case .clearPIN(_, let serial):
            if result != nil { pins[serial] = nil }
        case .requirePIN, .resync, .unlock:
            break
        }
    }

    private func remember(user: String, input: [UInt8], codeAtEnd: Bool, challenge: String?, _ result: VerifyResult) {
        switch result.outcome {
        case .accepted, .acceptedRecoveryCode:
            accepted.append((user, input, codeAtEnd, challenge))
        case .newPINRequired(let serial, _):
            accepted.append((user, input, codeAtEnd, challenge))
            pendingNewPIN = (user, serial)
        case .nextCodeRequired(let serial, let position):
            pendingNextCode = (user, serial, position)
        case .rejected, .replayed, .locked:
            break
        }
    }
}
