import Foundation
import Testing
import TestSupport
@testable import SecurOTPCore
@testable import SecurOTPService
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// The host pipeline (HostVerification) over the SQLite adapter and the memory backend, on a
/// clock the test sets: the same random host calls give the same answers, token rows, failure
/// rows, recovery codes and offline reservations. (SecurOTPServerTests runs the same pipeline
/// on SQLite and PostgreSQL through the services.)
@Suite struct PipelineBackendTests {
    static let host = Caller(kind: .host, name: "web1", address: "127.0.0.1")
    static let offlineHost = Caller(kind: .host, name: "laptop", address: "127.0.0.1", offlineCodes: 3, credentialHash: Array(repeating: 7, count: 32))
    static let t0: Int64 = 1_800_000_000

    struct World {
        let backend: SQLiteBackend
        let sqlite: SQLiteVerificationStorage
        let memory: MemoryBackend
        let hotpSeed: SecretBytes
        let totpSeed: SecretBytes
        let recoveryCodes: [String]
        let serial: String
    }

    static func world() throws -> World {
        let backend = try SQLiteBackend()
        let temp = backend.temp
        let hotpSeed = try #require(SecretBytes.random(count: 20)), totpSeed = try #require(SecretBytes.random(count: 20))
        let hotp = try temp.store.enroll(user: "alice", parameters: OATHParameters(kind: .hotp), seed: hotpSeed, nickname: "", issuer: "",
                                         maxTokens: 10, now: t0)
        _ = try temp.store.enroll(user: "bob", parameters: OATHParameters(kind: .totp), seed: totpSeed, nickname: "", issuer: "",
                                  maxTokens: 10, now: t0)
        let codes = try temp.store.generateRecoveryCodes(user: "carol", count: 3, now: t0)
        let sqlite = SQLiteVerificationStorage(store: temp.store, tables: AccessTables(db: temp.store.database))
        return World(backend: backend, sqlite: sqlite, memory: try MemoryBackend(copying: temp.store), hotpSeed: hotpSeed, totpSeed: totpSeed,
                     recoveryCodes: codes, serial: hotp.serial)
    }

    /// The answer without what is random by design (challenge ids, offline code salts).
    static func normalised(_ response: VerifyResponse) -> String {
        var copy = response
        copy.challenge?.id = "-"
        copy.offline = response.offline?.map { codes in
            var codes = codes
            codes.codes = codes.codes.map { OfflineCode(counter: $0.counter, salt: "-", hash: "-") }
            return codes
        }
        return "\(copy)"
    }

    static func saltless(_ dump: StateDump) -> StateDump {
        var copy = dump
        copy.tokens = dump.tokens.map { token in
            var token = token
            token.pinHash = token.pinHash.map { _ in [] }
            return token
        }
        return copy
    }

    @Test(arguments: 1...8)
    func sqliteAndMemoryAgree(seed: Int) throws {
        let w = try Self.world()
        var random = SplitMix64(state: UInt64(seed))
        var now = Self.t0
        var counter: UInt64 = 0
        var pending: ChallengeInfo?
        var pin = ""
        var lastChallengeIDs: [String]?
        var outcomes: Set<String> = []
        for step in 0..<150 {
            now += Int64(random.below(40))
            let policy = VerifyPolicy()
            let responses: [VerifyResponse]
            switch random.below(100) {
            case 0..<35:
                let position = UInt64(max(0, Int64(counter) + Int64(random.pick([0, 0, 0, -1, 1, 2, 4, 30]))))
                let caller = random.chance(30) ? Self.offlineHost : Self.host
                let passcode = pin + String(decoding: code(w.hotpSeed, counter: position), as: UTF8.self)
                let call = try VerifyCall(VerifyRequest(user: "alice", passcode: passcode), caller: caller)
                responses = try [w.sqlite, w.memory].map { (storage: any VerificationStorage) throws(StoreError) in
                    try storage.verify(call, engine: w.memory.engine, policy: policy, now: now)
                }
            case 35..<50:
                let step = UInt64(now / 30) + UInt64(random.below(3)) - 1
                let typed = random.chance(25) ? "000000" : String(decoding: code(w.totpSeed, counter: step), as: UTF8.self)
                let call = try VerifyCall(VerifyRequest(user: "bob", passcode: typed), caller: Self.host)
                responses = try [w.sqlite, w.memory].map { (storage: any VerificationStorage) throws(StoreError) in
                    try storage.verify(call, engine: w.memory.engine, policy: policy, now: now)
                }
            case 50..<60:
                let call = try VerifyCall(VerifyRequest(user: random.pick(["carol", "mallory"]), passcode: random.pick(w.recoveryCodes)),
                                          caller: Self.host)
                responses = try [w.sqlite, w.memory].map { (storage: any VerificationStorage) throws(StoreError) in
                    try storage.verify(call, engine: w.memory.engine, policy: policy, now: now)
                }
            case 60..<64 where pin.isEmpty:
                try w.backend.store.requirePIN(user: "alice", serial: w.serial)
                try w.memory.requirePIN(user: "alice", serial: w.serial)
                continue
            default:
                guard let challenge = pending else { continue }
                let answer = switch challenge.kind {
                case .newPIN: random.chance(25) ? "12" : "4711"
                case .passcode: "4711" + String(decoding: code(w.hotpSeed, counter: counter), as: UTF8.self)
                default: pin + String(decoding: code(w.hotpSeed, counter: counter + UInt64(random.below(3))), as: UTF8.self)
                }
                // The two sides hold different challenge ids (random): each answers its own.
                let ids = try #require(lastChallengeIDs)
                let calls = try ids.map { try AnswerCall(AnswerRequest(user: "alice", challengeId: $0, answer: answer), caller: Self.host) }
                responses = [try w.sqlite.answer(calls[0], engine: w.memory.engine, policy: policy, now: now),
                             try w.memory.answer(calls[1], engine: w.memory.engine, policy: policy, now: now)]
            }
            #expect(Self.normalised(responses[0]) == Self.normalised(responses[1]), "step \(step), seed \(seed)")
            // A PIN set in a dialogue is hashed with a fresh salt on each side: compare that one is set.
            let memoryDump = Self.saltless(try w.memory.dump()), sqliteDump = Self.saltless(try w.backend.dump())
            #expect(memoryDump == sqliteDump, "step \(step), seed \(seed): the rows differ")
            guard memoryDump == sqliteDump else { return }
            for host in [Self.host, Self.offlineHost] {
                let sqliteGrants = try w.sqlite.serialised(user: "alice") { () throws(StoreError) in
                    try w.sqlite.reserve(host: host.name, user: "alice", withdrawing: [])
                }
                let memoryGrants = try w.memory.reserve(host: host.name, user: "alice", withdrawing: [])
                #expect(sqliteGrants == memoryGrants, "step \(step), seed \(seed): reservations")
                guard sqliteGrants == memoryGrants else { return }
            }
            pending = responses[0].challenge
            lastChallengeIDs = responses.compactMap { $0.challenge?.id }
            if lastChallengeIDs?.count != 2 { lastChallengeIDs = nil; pending = nil }
            if responses[0].reason == "new PIN set" { pin = "4711" }
            if let value = try w.backend.store.tokens(user: "alice").first?.parameters.counter { counter = value }
            outcomes.insert(responses[0].outcome?.rawValue ?? "-")
            guard Self.normalised(responses[0]) == Self.normalised(responses[1]) else { return }
        }
        #expect(outcomes.isSuperset(of: ["accepted", "rejected", "replayed", "next_step"]), "seed \(seed): \(outcomes)")
    }

    @Test("Two decisions on one memory snapshot: the second apply throws and leaves nothing, not even its audit entry")
    func staleSnapshot() throws {
        let w = try Self.world()
        let call = try VerifyCall(VerifyRequest(user: "alice", passcode: String(decoding: code(w.hotpSeed, counter: 0), as: UTF8.self)),
                                  caller: Self.host)
        let reads = VerifyReads(failureKey: nil, snapshot: try w.memory.snapshot(user: "alice", failureKey: nil, rows: .tokens))
        let a = try HostVerification.verify(call, reads, engine: w.memory.engine, policy: VerifyPolicy(), now: Self.t0)
        let b = try HostVerification.verify(call, reads, engine: w.memory.engine, policy: VerifyPolicy(), now: Self.t0)
        #expect(a.response.result == .accept && b.response.result == .accept)
        try w.memory.serialised(user: "alice") { () throws(StoreError) in try w.memory.apply(a.changes, host: "web1", user: "alice") }
        #expect(throws: StoreError.self) {
            try w.memory.serialised(user: "alice") { () throws(StoreError) in try w.memory.apply(b.changes, host: "web1", user: "alice") }
        }
        #expect(w.memory.rows.audit.count == 1)
    }
}
