import Testing
import TestSupport
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// Two daemon nodes that skipped the per-user serialisation: both decide on the same snapshot,
/// then commit one after the other. The conditional writes alone must keep every code
/// single-use, and whatever commits must be what some serial order would have given.
@Suite struct StaleSnapshotTests {
    let now = EngineFixture.now
    let step = EngineFixture.step

    /// alice: a TOTP token (last step just behind the window), an HOTP token, two recovery codes.
    func backend(_ f: EngineFixture) throws -> MemoryBackend {
        let backend = MemoryBackend(engine: f.engine)
        for token in [try f.token(serial: "1", lastStep: step - 2), try f.token(.hotp, serial: "2", counter: 4)] {
            backend.rows.tokens[token.record.serial] = MemoryBackend.Token(row: TokenRow(token.record), sealedSeed: token.sealedSeed, pinHash: nil)
        }
        for code in Self.recoveryCodes {
            let hash = try #require(Array(code.utf8).withUnsafeBufferPointer { SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) })
            backend.rows.recoveryCodes["alice", default: [:]][String(code.prefix(4))] = MemoryBackend.RecoveryCode(hash: hash, used: 0)
        }
        return backend
    }

    static let recoveryCodes = ["abcd-efgh-jkmn", "pqrs-tuvw-xyz2"]

    /// One node's decision on the backend's rows as they are now.
    func decide(_ engine: VerificationEngine, _ backend: MemoryBackend, _ input: [UInt8], policy: VerifyPolicy = VerifyPolicy()) throws -> VerificationEngine.Decision<VerifyResult> {
        try input.withUnsafeBufferPointer {
            try engine.verify(backend.snapshot(user: "alice", failureKey: "alice"), user: "alice", input: $0, codeAtEnd: false, policy: policy, now: now)
        }
    }

    func isAcceptance(_ result: VerifyResult) -> Bool {
        switch result.outcome {
        case .accepted, .acceptedRecoveryCode, .newPINRequired: true
        default: false
        }
    }

    @Test(arguments: [
        ("one TOTP code twice", 0, 0), ("two fresh TOTP codes", 0, 1), ("one HOTP code twice", 10, 10),
        ("two fresh HOTP codes", 10, 11), ("one recovery code twice", 20, 20),
    ])
    func twoNodesOneAcceptance(_ what: String, first: Int, second: Int) throws {
        let f = try EngineFixture()
        let inputs: [Int: [UInt8]] = [0: f.code(at: step), 1: f.code(at: step + 1), 10: f.code(at: 4), 11: f.code(at: 5),
                                      20: Array(Self.recoveryCodes[0].utf8)]
        let backend = try backend(f)
        let nodeA = VerificationEngine(dataKey: f.key), nodeB = VerificationEngine(dataKey: f.key)
        let a = try decide(nodeA, backend, try #require(inputs[first]))
        let b = try decide(nodeB, backend, try #require(inputs[second]))
        #expect(isAcceptance(a.result) && isAcceptance(b.result), "both nodes accept on the stale snapshot")
        try backend.commit(a.writes)
        #expect(throws: StoreError(.database, "")) { try backend.commit(b.writes) }
        // The loser left nothing behind; the next look sees the winner's write.
        #expect(!isAcceptance(try decide(nodeB, backend, try #require(inputs[first])).result))
    }

    /// The same races against the real store, each write's SQL condition on its own: as if two
    /// connections had got past BEGIN IMMEDIATE's serialisation.
    final class StaleStore {
        let temp: TemporaryStore
        let seed: SecretBytes
        var store: Store { temp.store }

        init(_ kind: OATHKind) throws {
            temp = try TemporaryStore()
            seed = try #require(SecretBytes.random(count: 20))
            _ = try temp.store.enroll(user: "alice", parameters: OATHParameters(kind: kind), seed: seed, nickname: "", issuer: "",
                                      maxTokens: 10, now: EngineFixture.now)
        }

        func snapshot() throws -> VerifySnapshot {
            VerifySnapshot(failures: try store.userState("alice"), tokens: try store.activeTokens(user: "alice"),
                           recoveryCodes: try store.unusedRecoveryCodes(user: "alice"))
        }

        func decide(_ snapshot: VerifySnapshot, _ input: [UInt8]) throws -> VerificationEngine.Decision<VerifyResult> {
            try input.withUnsafeBufferPointer {
                try store.engine.verify(snapshot, user: "alice", input: $0, codeAtEnd: false, policy: VerifyPolicy(), now: EngineFixture.now)
            }
        }

        func commit(_ decision: VerificationEngine.Decision<VerifyResult>) throws {
            try store.db.immediateTransaction { () throws(StoreError) in try store.apply(decision.writes) }
        }
    }

    @Test func sqliteRefusesAStaleStepOrCounter() throws {
        for kind in [OATHKind.totp, .hotp] {
            let stale = try StaleStore(kind)
            let position = kind == .totp ? step : 0
            let snapshot = try stale.snapshot()
            let first = try stale.decide(snapshot, code(stale.seed, counter: UInt64(position)))
            let again = try stale.decide(snapshot, code(stale.seed, counter: UInt64(position)))
            let next = try stale.decide(snapshot, code(stale.seed, counter: UInt64(position + 1)))
            #expect(isAcceptance(first.result) && isAcceptance(again.result) && isAcceptance(next.result))
            #expect(first.writes.count == 1) // no failure row: only the step or counter guards it
            try stale.commit(first)
            #expect(throws: StoreError(.database, "")) { try stale.commit(again) }
            #expect(throws: StoreError(.database, "")) { try stale.commit(next) }
            #expect(try stale.store.verify("alice", code(stale.seed, counter: UInt64(position)), now: now).outcome != first.result.outcome)
        }
    }

    @Test func sqliteRefusesAStaleRecoveryCode() throws {
        let stale = try StaleStore(.totp)
        let code = Array(Self.recoveryCodes[0].utf8)
        let hash = try #require(code.withUnsafeBufferPointer { SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) })
        try stale.store.db.prepare("INSERT INTO recovery_codes (user, id, hash, created) VALUES ('alice', 'abcd', ?, 1)").bind(.blob(hash)).run()
        let snapshot = try stale.snapshot()
        let first = try stale.decide(snapshot, code), again = try stale.decide(snapshot, code)
        #expect(first.result.outcome == .acceptedRecoveryCode(remaining: 0) && again.result == first.result)
        try stale.commit(first)
        #expect(throws: StoreError(.database, "")) { try stale.commit(again) }
    }

    @Test func sqliteRefusesAStaleFailureCount() throws {
        let stale = try StaleStore(.totp)
        let snapshot = try stale.snapshot()
        let misses = try (0..<2).map { _ in try stale.decide(snapshot, Array("12345x".utf8)) }
        try stale.commit(misses[0])
        // The second would overwrite the first's count instead of adding to it.
        #expect(throws: StoreError(.database, "")) { try stale.commit(misses[1]) }
        #expect(try stale.store.userState("alice").failures == 1)
        // A right code decided before a miss committed: its clear would drop that miss; the
        // whole transaction rolls back, the step included.
        let counted = try stale.snapshot()
        let hit = try stale.decide(counted, code(stale.seed, counter: UInt64(step)))
        #expect(isAcceptance(hit.result) && hit.writes.count == 2)
        try stale.commit(try stale.decide(counted, Array("12345x".utf8)))
        #expect(throws: StoreError(.database, "")) { try stale.commit(try stale.decide(counted, Array("12345x".utf8))) }
        #expect(throws: StoreError(.database, "")) { try stale.commit(hit) }
        #expect(try stale.store.userState("alice").failures == 2)
        #expect(try stale.store.tokens(user: "alice")[0].lastStep == -1)
    }

    /// Random pairs of attempts (right, neighbouring, replayed and wrong codes of both tokens,
    /// recovery codes) on one snapshot, with and without a failure row. Whenever the second
    /// commits, results and rows equal one of the two serial orders; and attempts on rows
    /// the other does not touch never conflict.
    @Test func whatCommitsIsSerialisable() throws {
        let f = try EngineFixture()
        let pool: [[UInt8]] = [f.code(at: step), f.code(at: step + 1), f.code(at: step - 1), f.code(at: step - 2), f.code(at: 4), f.code(at: 5),
                               f.code(at: 3), Array(Self.recoveryCodes[0].utf8), Array(Self.recoveryCodes[1].utf8),
                               Array("zzzz-zzzz-zzzz".utf8), Array("12345x".utf8)]
        var policy = VerifyPolicy()
        policy.deny = 3
        policy.resyncWindow = 0
        var random = SplitMix64(state: 2026)
        let nodeA = VerificationEngine(dataKey: f.key), nodeB = VerificationEngine(dataKey: f.key)
        let backend = try backend(f)
        let template = backend.rows
        var bothCommitted = 0, conflicts = 0
        for _ in 0..<300 {
            let a = random.pick(pool), b = random.pick(pool)
            var start = template
            let failures = random.pick([UserState.clear, UserState(failures: 1, lockedUntil: 0), UserState(failures: 2, lockedUntil: 0)])
            if failures != .clear { start.failures["alice"] = MemoryBackend.FailureRow(state: failures, lastFailure: now - 5) }
            backend.rows = start
            let decisionA = try decide(nodeA, backend, a, policy: policy), decisionB = try decide(nodeB, backend, b, policy: policy)
            try backend.commit(decisionA.writes)
            let committed = (try? backend.commit(decisionB.writes)) != nil
            let final = backend.rows

            // A, then B deciding afresh; and B (as decided), then A deciding afresh.
            backend.rows = start
            try backend.commit(decisionA.writes)
            let afterA = try decide(nodeB, backend, b, policy: policy)
            try backend.commit(afterA.writes)
            let orderAB = (rows: backend.rows, a: decisionA.result, b: afterA.result)
            backend.rows = start
            try backend.commit(decisionB.writes)
            let afterB = try decide(nodeA, backend, a, policy: policy)
            try backend.commit(afterB.writes)
            let orderBA = (rows: backend.rows, a: afterB.result, b: decisionB.result)

            if committed {
                bothCommitted += 1
                let matches = (orderAB.rows == final && Self.serial(orderAB.b) == Self.serial(decisionB.result))
                    || (orderBA.rows == final && Self.serial(orderBA.a) == Self.serial(decisionA.result))
                #expect(matches, "\(String(decoding: a, as: UTF8.self)) then \(String(decoding: b, as: UTF8.self)): no serial order gives what committed")
            } else {
                conflicts += 1
                let touched = Set(decisionA.writes.map(Self.row)).intersection(decisionB.writes.map(Self.row))
                #expect(!touched.isEmpty, "\(decisionB.writes) conflicted with \(decisionA.writes) without sharing a row")
            }
        }
        #expect(bothCommitted > 50 && conflicts > 50)
    }

    /// A result without the one count the writes do not guard: two different recovery codes
    /// spent on one snapshot both say how many were left before the other (the contract's
    /// serialisation keeps it exact).
    static func serial(_ result: VerifyResult) -> VerifyResult {
        guard case .acceptedRecoveryCode = result.outcome else { return result }
        var copy = result
        copy.outcome = .acceptedRecoveryCode(remaining: -1)
        return copy
    }

    /// The row a write changes.
    static func row(_ write: StateWrite) -> String {
        switch write {
        case .advanceStep(let serial, _, _, _, _), .advanceCounter(let serial, _, _, _), .markUsed(let serial, _): "token \(serial)"
        case .setPIN(_, let serial, _, _, _), .clearPIN(_, let serial), .requirePIN(_, let serial, _): "token \(serial)"
        case .spendRecoveryCode(let user, let id, _): "recovery \(user) \(id)"
        case .setFailures(let key, _, _, _), .clearFailures(let key, _): "failures \(key)"
        }
    }
}
