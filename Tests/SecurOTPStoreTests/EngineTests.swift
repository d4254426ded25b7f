import Testing
@testable import SecurOTPCore
@testable import SecurOTPSecurID
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// Hand-built snapshots for the engine: no database. Codes come from SecurOTPCore's HOTP and
/// OCRA (checked against RFC vectors elsewhere), not from the engine.
struct EngineFixture {
    static let now: Int64 = 1_800_000_015
    static let step = now / 30
    let key: SecretBytes
    let engine: VerificationEngine
    let seed: SecretBytes

    init() throws {
        key = try #require(SecretBytes.random(count: 32))
        engine = VerificationEngine(dataKey: key)
        seed = try #require(SecretBytes.random(count: 20))
    }

    /// A token of alice's as a backend would read it.
    func token(_ kind: TokenKind = .totp, serial: String = "1000000001", user: String = "alice", counter: UInt64 = 0,
               lastStep: Int64 = -1, pinMode: PINMode = .none, pin: String? = nil, suite: String = "",
               expires: Int64 = 0, seed: SecretBytes? = nil) throws -> TokenSnapshot {
        let parameters = OATHParameters(kind: kind == .hotp ? .hotp : .totp, counter: counter)
        var record = NewToken(kind: kind, parameters: parameters, seed: seed ?? self.seed, pinMode: pinMode, expires: expires, suite: suite)
            .record(serial: serial, user: user, created: 1)
        record.lastStep = lastStep
        var pinHash: [UInt8] = []
        if let pin {
            pinHash = try #require(Array(pin.utf8).withUnsafeBufferPointer { SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) })
            record.hasPIN = true
            record.pinLength = pin.count
        }
        let sealed = try SeedSealing.seal(seed ?? self.seed, key: key, user: user, serial: serial)
        return TokenSnapshot(record: record, sealedSeed: sealed, pinHash: pinHash)
    }

    func code(at position: Int64, digits: Int = 6) -> [UInt8] {
        OTP.hotp(secret: seed, counter: UInt64(position), digits: digits, algorithm: .sha1)
    }

    func verify(_ snapshot: VerifySnapshot, _ input: [UInt8], policy: VerifyPolicy = VerifyPolicy(), failureKey: String? = nil,
                countsFailure: Bool = true, challenge: String? = nil, charged: Bool = false,
                now: Int64 = now) throws -> VerificationEngine.Decision<VerifyResult> {
        try input.withUnsafeBufferPointer {
            try engine.verify(snapshot, user: "alice", input: $0, codeAtEnd: false, policy: policy, now: now, failureKey: failureKey,
                              countsFailure: countsFailure, challenge: challenge, charged: charged)
        }
    }
}

@Suite struct EngineTests {
    let now = EngineFixture.now
    let step = EngineFixture.step

    @Test func aRightCodeIsOneConditionalWrite() throws {
        let f = try EngineFixture()
        let decision = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token()]), f.code(at: step))
        #expect(decision.result == VerifyResult(outcome: .accepted(serial: "1000000001", digits: 6), userHasTokens: true, failures: 0, lockedNow: false))
        // No failure row, so nothing to clear.
        #expect(decision.writes == [.advanceStep(serial: "1000000001", from: -1, to: step, drift: 0, lastUsed: now)])
    }

    @Test func anAcceptanceClearsTheFailureRowItRead() throws {
        let f = try EngineFixture()
        let read = UserState(failures: 2, lockedUntil: 0)
        let decision = try f.verify(VerifySnapshot(failures: read, tokens: [try f.token(lastStep: step - 1)]), f.code(at: step + 1))
        #expect(decision.result.outcome == .accepted(serial: "1000000001", digits: 6))
        #expect(decision.writes == [.advanceStep(serial: "1000000001", from: step - 1, to: step + 1, drift: 0, lastUsed: now),
                                    .clearFailures(key: "alice", expected: read)])
    }

    @Test func aMissCountsOnTheFailureKeyAndLocksAtDeny() throws {
        let f = try EngineFixture()
        var policy = VerifyPolicy()
        policy.deny = 3
        policy.unlockTime = 60
        let wrong = Array("12345x".utf8) // never a code
        let key = Store.unresolvedUsersKey
        let first = try f.verify(VerifySnapshot(failures: UserState(failures: 1, lockedUntil: 0), tokens: [try f.token()]), wrong,
                                 policy: policy, failureKey: key)
        #expect(first.result == VerifyResult(outcome: .rejected, userHasTokens: true, failures: 2, lockedNow: false, note: "wrong code"))
        #expect(first.writes == [.setFailures(key: key, expected: UserState(failures: 1, lockedUntil: 0), to: UserState(failures: 2, lockedUntil: 0), at: now)])
        let third = try f.verify(VerifySnapshot(failures: UserState(failures: 2, lockedUntil: 0), tokens: [try f.token()]), wrong, policy: policy)
        #expect(third.result.lockedNow && third.result.failures == 3)
        #expect(third.writes == [.setFailures(key: "alice", expected: UserState(failures: 2, lockedUntil: 0), to: UserState(failures: 3, lockedUntil: now + 60), at: now)])
        policy.unlockTime = 0
        let forever = try f.verify(VerifySnapshot(failures: UserState(failures: 2, lockedUntil: 0)), wrong, policy: policy)
        #expect(forever.writes == [.setFailures(key: "alice", expected: UserState(failures: 2, lockedUntil: 0),
                                                to: UserState(failures: 3, lockedUntil: UserState.lockedUntilUnlocked), at: now)])
    }

    @Test func aDamagedFailureCountDoesNotTrap() throws {
        let f = try EngineFixture()
        var policy = VerifyPolicy()
        policy.deny = 0
        let decision = try f.verify(VerifySnapshot(failures: UserState(failures: .max, lockedUntil: 0)), Array("123456".utf8), policy: policy)
        #expect(decision.result.failures == .max)
    }

    @Test func aLockThatRanOutStartsTheCountAgain() throws {
        let f = try EngineFixture()
        let read = UserState(failures: 5, lockedUntil: now)
        let miss = try f.verify(VerifySnapshot(failures: read, tokens: [try f.token()]), Array("12345x".utf8))
        #expect(miss.result.failures == 1)
        #expect(miss.writes == [.setFailures(key: "alice", expected: read, to: UserState(failures: 1, lockedUntil: 0), at: now)])
        let hit = try f.verify(VerifySnapshot(failures: read, tokens: [try f.token()]), f.code(at: step))
        #expect(hit.writes.last == .clearFailures(key: "alice", expected: read))
    }

    @Test func tryFirstPassMissesWriteNothing() throws {
        let f = try EngineFixture()
        let decision = try f.verify(VerifySnapshot(failures: UserState(failures: 1, lockedUntil: 0), tokens: [try f.token()]),
                                    Array("password".utf8), countsFailure: false)
        #expect(decision.result == VerifyResult(outcome: .rejected, userHasTokens: true, failures: 1, lockedNow: false, note: "wrong code"))
        #expect(decision.writes.isEmpty)
    }

    @Test func aUsedStepIsAReplay() throws {
        let f = try EngineFixture()
        let decision = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token(lastStep: step)]), f.code(at: step - 1))
        #expect(decision.result.outcome == .replayed(serial: "1000000001"))
        #expect(decision.writes == [.setFailures(key: "alice", expected: .clear, to: UserState(failures: 1, lockedUntil: 0), at: now)])
    }

    @Test func hotpMovesTheCounterPastTheMatch() throws {
        let f = try EngineFixture()
        let decision = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token(.hotp, counter: 7)]), f.code(at: 9))
        #expect(decision.result.outcome == .accepted(serial: "1000000001", digits: 6))
        #expect(decision.writes == [.advanceCounter(serial: "1000000001", from: 7, to: 10, lastUsed: now)])
    }

    @Test func theFirstTokenInSnapshotOrderWins() throws {
        let f = try EngineFixture()
        let tokens = [try f.token(serial: "2"), try f.token(serial: "1")] // one secret, two serials
        #expect(try f.verify(VerifySnapshot(failures: .clear, tokens: tokens), f.code(at: step)).result.outcome == .accepted(serial: "2", digits: 6))
    }

    @Test func aRecoveryCodeIsSpentWhileUnused() throws {
        let f = try EngineFixture()
        let codes = ["abcd-efgh-jkmn", "pqrs-tuvw-xyz2", "3456-789a-bcde"]
        let rows = try codes.map { code in
            RecoveryCodeRow(id: String(code.prefix(4)), hash: try #require(Array(code.utf8).withUnsafeBufferPointer {
                SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound)
            }))
        }
        let input = Array(codes[1].uppercased().utf8)
        #expect(input.withUnsafeBufferPointer { VerificationEngine.readsRecoveryCodes(input: $0, codeAtEnd: false) })
        #expect(!input.withUnsafeBufferPointer { VerificationEngine.readsRecoveryCodes(input: $0, codeAtEnd: true) })
        let read = UserState(failures: 1, lockedUntil: 0)
        let decision = try f.verify(VerifySnapshot(failures: read, recoveryCodes: rows), input)
        #expect(decision.result == VerifyResult(outcome: .acceptedRecoveryCode(remaining: 2), userHasTokens: true, failures: 0, lockedNow: false))
        #expect(decision.writes == [.spendRecoveryCode(user: "alice", id: "pqrs", usedAt: now), .clearFailures(key: "alice", expected: read)])
        // Right shape, wrong code: a failure, and the tokens are not looked at.
        let wrong = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token()], recoveryCodes: rows), Array("pqrs-tuvw-xyz3".utf8))
        #expect(wrong.result == VerifyResult(outcome: .rejected, userHasTokens: true, failures: 1, lockedNow: false, note: "not a valid unused recovery code"))
    }

    @Test func aUserWithoutTokensIsAnsweredLikeAWrongCode() throws {
        let f = try EngineFixture()
        let decision = try f.verify(VerifySnapshot(failures: .clear), Array("123456".utf8))
        #expect(decision.result == VerifyResult(outcome: .rejected, userHasTokens: false, failures: 1, lockedNow: false, note: "no active token"))
        #expect(decision.writes == [.setFailures(key: "alice", expected: .clear, to: UserState(failures: 1, lockedUntil: 0), at: now)])
    }

    @Test func aCodeOutsideTheWindowThenTheNextOneLearnsTheDrift() throws {
        let f = try EngineFixture()
        let snapshot = VerifySnapshot(failures: .clear, tokens: [try f.token()])
        let first = try f.verify(snapshot, f.code(at: step + 5))
        #expect(first.result.outcome == .nextCodeRequired(serial: "1000000001", position: step + 5))
        // Counted before the next code is asked for (ChargedAttemptTests).
        #expect(first.writes == [.setFailures(key: "alice", expected: .clear, to: UserState(failures: 1, lockedUntil: 0), at: now)])
        let next = try f.code(at: step + 6).withUnsafeBufferPointer {
            try f.engine.verifyNextCode(snapshot, user: "alice", serial: "1000000001", position: step + 5, input: $0, policy: VerifyPolicy(), now: now)
        }
        #expect(next.result == VerifyResult(outcome: .accepted(serial: "1000000001", digits: 6), userHasTokens: true, failures: 0, lockedNow: false,
                                            note: "resynchronised"))
        #expect(next.writes == [.advanceStep(serial: "1000000001", from: -1, to: step + 6, drift: 6, lastUsed: now)])
        // A position no verify returned (a daemon client's) is refused like a wrong code, not trapped on.
        for position: Int64 in [-1, -5, .min] {
            let refused = try f.code(at: 0).withUnsafeBufferPointer {
                try f.engine.verifyNextCode(snapshot, user: "alice", serial: "1000000001", position: position, input: $0, policy: VerifyPolicy(), now: now)
            }
            #expect(refused.result.outcome == .rejected && refused.writes.count == 1)
        }
    }

    @Test func nextCodeAfterFailuresHoldsBackARightCode() throws {
        let f = try EngineFixture()
        var policy = VerifyPolicy()
        policy.nextCodeAfter = 2
        let decision = try f.verify(VerifySnapshot(failures: UserState(failures: 2, lockedUntil: 0), tokens: [try f.token()]), f.code(at: step), policy: policy)
        #expect(decision.result.outcome == .nextCodeRequired(serial: "1000000001", position: step))
        // A right code held back still counts until its next code settles it (ChargedAttemptTests).
        #expect(decision.writes == [.setFailures(key: "alice", expected: UserState(failures: 2, lockedUntil: 0),
                                                 to: UserState(failures: 3, lockedUntil: 0), at: now)])
    }

    @Test func aTokenWithoutItsFirstPINTakesTheBareCodeAndAsksForOne() throws {
        let f = try EngineFixture()
        let decision = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token(pinMode: .prefix)]), f.code(at: step))
        #expect(decision.result.outcome == .newPINRequired(serial: "1000000001", pinMode: .prefix))
        #expect(decision.writes == [.advanceStep(serial: "1000000001", from: -1, to: step, drift: 0, lastUsed: now)])
        let withPIN = VerifySnapshot(failures: .clear, tokens: [try f.token(pinMode: .prefix, pin: "ab12")])
        #expect(try f.verify(withPIN, Array("ab12".utf8) + f.code(at: step)).result.outcome == .accepted(serial: "1000000001", digits: 10))
        let wrongPIN = try f.verify(withPIN, Array("ab13".utf8) + f.code(at: step))
        #expect(wrongPIN.result.note == "right tokencode, wrong PIN (token 1000000001)")
    }

    @Test func pinChangesAreSingleWrites() throws {
        let f = try EngineFixture()
        let plain = try f.token().record
        let set = try Array("2468".utf8).withUnsafeBufferPointer { try VerificationEngine.setPIN(on: plain, pin: $0) }
        guard case .setPIN(let user, let serial, let mode, let hash, let length) = set else {
            Issue.record("expected a setPIN write, got \(set)")
            return
        }
        #expect(user == "alice" && serial == "1000000001" && mode == .prefix && length == 4)
        #expect(Array("2468".utf8).withUnsafeBufferPointer { SlowHash.verify($0, against: hash) })
        #expect(throws: StoreError(.invalidInput, "")) {
            try Array("24 68".utf8).withUnsafeBufferPointer { try VerificationEngine.setPIN(on: plain, pin: $0) }
        }
        let pinpad = try f.token(pinMode: .addedByToken).record
        #expect(throws: StoreError(.invalidInput, "")) {
            try Array("ab12".utf8).withUnsafeBufferPointer { try VerificationEngine.setPIN(on: pinpad, pin: $0) }
        }
        #expect(VerificationEngine.requirePIN(on: plain) == .requirePIN(user: "alice", serial: "1000000001", mode: .prefix))
        #expect(VerificationEngine.requirePIN(on: pinpad) == .requirePIN(user: "alice", serial: "1000000001", mode: .addedByToken))
        #expect(VerificationEngine.clearPIN(on: pinpad) == .clearPIN(user: "alice", serial: "1000000001"))
    }

    @Test func resyncReturnsTheWriteAndWhatTheTokenThenHolds() throws {
        let f = try EngineFixture()
        let totp = try f.engine.resync([try f.token()], user: "alice", serial: "1000000001", first: f.code(at: step - 200),
                                       second: f.code(at: step - 199), now: now)
        #expect(totp.result == ResyncResult(kind: .totp, drift: -199, counter: 0))
        #expect(totp.writes == [.advanceStep(serial: "1000000001", from: -1, to: step - 199, drift: -199, lastUsed: now)])
        let hotp = try f.engine.resync([try f.token(.hotp, counter: 3)], user: "alice", serial: "1000000001", first: f.code(at: 500),
                                       second: f.code(at: 501), now: now)
        #expect(hotp.result == ResyncResult(kind: .hotp, drift: 0, counter: 502))
        #expect(hotp.writes == [.advanceCounter(serial: "1000000001", from: 3, to: 502, lastUsed: now)])
        #expect(throws: StoreError(.notFound, "")) {
            try f.engine.resync([], user: "alice", serial: "1000000001", first: [], second: [], now: now)
        }
    }

    @Test func aChallengeOnlyOCRAResponseMarksTheTokenUsed() throws {
        let f = try EngineFixture()
        let suite = "OCRA-1:HOTP-SHA1-6:QN08"
        let key = try #require(SecretBytes.random(count: 20))
        let token = try f.token(.ocra, suite: suite, seed: key)
        let response = try OCRA.response(suite: OCRASuite(suite), key: key, question: "12345678")
        let decision = try f.verify(VerifySnapshot(failures: .clear, tokens: [token]), response, challenge: "12345678")
        #expect(decision.result.outcome == .accepted(serial: "1000000001", digits: 6))
        #expect(decision.writes == [.markUsed(serial: "1000000001", lastUsed: now)])
        // Without the challenge the login showed, OCRA tokens are not tried.
        #expect(try f.verify(VerifySnapshot(failures: .clear, tokens: [token]), response).result.outcome == .rejected)
    }

    @Test func theChallengeComesFromTheFirstUsableOCRAToken() throws {
        let f = try EngineFixture()
        let expired = try f.token(.ocra, serial: "1", suite: "OCRA-1:HOTP-SHA1-6:QN08", expires: now)
        var disabled = try f.token(.ocra, serial: "2", suite: "OCRA-1:HOTP-SHA1-6:QA10").record
        disabled.state = "disabled"
        let unparsable = try f.token(.ocra, serial: "3", suite: "OCRA-2:HOTP-SHA1-6:QN08")
        let usable = try f.token(.ocra, serial: "4", suite: "OCRA-1:HOTP-SHA256-8:C-QH16")
        let tokens = [expired.record, try f.token().record, disabled, unparsable.record, usable.record]
        #expect(VerificationEngine.challengeSuite(among: tokens, now: now)?.text == "OCRA-1:HOTP-SHA256-8:C-QH16")
        #expect(VerificationEngine.challengeSuite(among: tokens, now: now - 1)?.text == "OCRA-1:HOTP-SHA1-6:QN08")
        #expect(VerificationEngine.challengeSuite(among: [try f.token().record], now: now) == nil)
    }

    @Test func anExpiredTokenIsSkippedWithANote() throws {
        let f = try EngineFixture()
        let decision = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token(expires: now)]), f.code(at: step))
        #expect(decision.result.outcome == .rejected && decision.result.note == "token 1000000001 expired")
    }

    @Test func aSeedSealedForSomeoneElseIsAnError() throws {
        let f = try EngineFixture()
        var moved = try f.token(user: "mallory")
        moved.record.user = "alice"
        #expect(throws: StoreError(.corrupt, "")) { try f.verify(VerifySnapshot(failures: .clear, tokens: [moved]), f.code(at: step)) }
    }
}
