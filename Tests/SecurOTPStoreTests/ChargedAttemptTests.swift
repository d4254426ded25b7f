import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// Attempts that open a dialogue are counted before the user answers (issue 12, §1, §2 and §6;
/// docs/security.md "Every attempt counts" and "Same work for everyone"). Each test here failed
/// on the engine before these rules: a band hit and an OCRA challenge wrote nothing, a locked
/// attempt wrote nothing, and small challenge-only OCRA suites answered logins.
@Suite struct ChargedAttemptTests {
    let now = EngineFixture.now
    let step = EngineFixture.step

    func nextCode(_ f: EngineFixture, _ snapshot: VerifySnapshot, position: Int64, _ input: [UInt8],
                  policy: VerifyPolicy = VerifyPolicy()) throws -> VerificationEngine.Decision<VerifyResult> {
        try input.withUnsafeBufferPointer {
            try f.engine.verifyNextCode(snapshot, user: "alice", serial: "1000000001", position: position, input: $0, policy: policy, now: now)
        }
    }

    @Test func aCodeInTheResyncBandIsCountedBeforeTheNextCodeIsAsked() throws {
        let f = try EngineFixture()
        let read = UserState(failures: 1, lockedUntil: 0)
        let hit = try f.verify(VerifySnapshot(failures: read, tokens: [try f.token()]), f.code(at: step + 20))
        #expect(hit.result.outcome == .nextCodeRequired(serial: "1000000001", position: step + 20))
        #expect(hit.result.failures == 2)
        #expect(hit.writes == [.setFailures(key: "alice", expected: read, to: UserState(failures: 2, lockedUntil: 0), at: now)])
    }

    @Test func anAbandonedBandHitAtTheLimitLocksTheNextAttempt() throws {
        let f = try EngineFixture()
        var policy = VerifyPolicy()
        policy.deny = 2
        policy.unlockTime = 60
        // One failure, then a band hit: charged to 2 = deny, but not locked — the next code may still be right.
        let hit = try f.verify(VerifySnapshot(failures: UserState(failures: 1, lockedUntil: 0), tokens: [try f.token()]), f.code(at: step + 20),
                               policy: policy)
        #expect(hit.result.failures == 2 && !hit.result.lockedNow)
        // The dialogue was abandoned: the next login, even with the right code, is locked.
        let charged = UserState(failures: 2, lockedUntil: 0)
        let next = try f.verify(VerifySnapshot(failures: charged, tokens: [try f.token()]), f.code(at: step), policy: policy)
        #expect(next.result.outcome == .locked && next.result.lockedNow)
        #expect(next.writes == [.setFailures(key: "alice", expected: charged, to: UserState(failures: 2, lockedUntil: now + 60), at: now)])
    }

    @Test func theNextCodeSettlesTheCharge() throws {
        let f = try EngineFixture()
        var policy = VerifyPolicy()
        policy.deny = 2
        let charged = UserState(failures: 2, lockedUntil: 0)
        let snapshot = VerifySnapshot(failures: charged, tokens: [try f.token()])
        // Wrong: the charge is the failure (no second count) and it reaches deny: locked.
        let wrong = try nextCode(f, snapshot, position: step + 20, Array("12345x".utf8), policy: policy)
        #expect(wrong.result.outcome == .rejected && wrong.result.failures == 2 && wrong.result.lockedNow)
        // Right: accepted, the row cleared.
        let right = try nextCode(f, snapshot, position: step + 20, f.code(at: step + 21), policy: policy)
        #expect(right.result.outcome == .accepted(serial: "1000000001", digits: 6))
        #expect(right.writes.last == .clearFailures(key: "alice", expected: charged))
    }

    @Test func hotpLookAheadResyncIsChargedToo() throws {
        let f = try EngineFixture()
        let hit = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token(.hotp, counter: 0)]), f.code(at: 30))
        #expect(hit.result.outcome == .nextCodeRequired(serial: "1000000001", position: 30))
        #expect(hit.writes == [.setFailures(key: "alice", expected: .clear, to: UserState(failures: 1, lockedUntil: 0), at: now)])
    }

    @Test func anUncountedCheckOpensNoDialogue() throws {
        let f = try EngineFixture()
        let hit = try f.verify(VerifySnapshot(failures: .clear, tokens: [try f.token()]), f.code(at: step + 20), countsFailure: false)
        #expect(hit.result.outcome == .rejected && hit.writes.isEmpty)
    }

    @Test func anOCRAChallengeIsChargedWhenIssued() throws {
        let f = try EngineFixture()
        let suite = "OCRA-1:HOTP-SHA1-6:QN08"
        let key = try #require(SecretBytes.random(count: 20))
        let token = try f.token(.ocra, suite: suite, seed: key)
        var policy = VerifyPolicy()
        policy.deny = 2
        let issue = try #require(try f.engine.issueChallenge(VerifySnapshot(failures: .clear, tokens: [token]), user: "alice", policy: policy, now: now))
        #expect(issue.result == .issued(serial: "1000000001", suite: try OCRASuite(suite)))
        #expect(issue.writes == [.setFailures(key: "alice", expected: .clear, to: UserState(failures: 1, lockedUntil: 0), at: now)])

        // The answer to a charged challenge: wrong keeps the one count, right clears it.
        let charged = UserState(failures: 1, lockedUntil: 0)
        let snapshot = VerifySnapshot(failures: charged, tokens: [token])
        let wrong = try f.verify(snapshot, Array("000000".utf8), policy: policy, challenge: "12345678", charged: true)
        #expect(wrong.result.outcome == .rejected && wrong.result.failures == 1 && !wrong.result.lockedNow)
        let response = try OCRA.response(suite: OCRASuite(suite), key: key, question: "12345678")
        let right = try f.verify(snapshot, response, policy: policy, challenge: "12345678", charged: true)
        #expect(right.result.outcome == .accepted(serial: "1000000001", digits: 6))
        #expect(right.writes == [.markUsed(serial: "1000000001", lastUsed: now), .clearFailures(key: "alice", expected: charged)])

        // Two abandoned challenges reach deny=2: the third is not issued, the user is locked.
        let abandoned = UserState(failures: 2, lockedUntil: 0)
        let third = try #require(try f.engine.issueChallenge(VerifySnapshot(failures: abandoned, tokens: [token]), user: "alice", policy: policy, now: now))
        #expect(third.result == .locked(suite: try OCRASuite(suite)))
        #expect(third.writes == [.setFailures(key: "alice", expected: abandoned, to: UserState(failures: 2, lockedUntil: now + policy.unlockTime), at: now)])
        // A user without an OCRA token gets no challenge and no write.
        #expect(try f.engine.issueChallenge(VerifySnapshot(failures: .clear, tokens: [try f.token()]), user: "alice", policy: policy, now: now) == nil)
    }

    @Test(arguments: ["OCRA-1:HOTP-SHA1-6:QN04", "OCRA-1:HOTP-SHA1-6:QN07", "OCRA-1:HOTP-SHA1-6:QH06", "OCRA-1:HOTP-SHA1-6:QA05"])
    func aSmallChallengeOnlySuiteNeverAnswersALogin(suite: String) throws {
        let f = try EngineFixture()
        let key = try #require(SecretBytes.random(count: 20))
        let parsed = try OCRASuite(suite)
        let challenge = try #require(parsed.randomChallenge())
        let token = try f.token(.ocra, suite: suite, seed: key)
        #expect(VerificationEngine.challengeSuite(among: [token.record], now: now) == nil)
        let response = try OCRA.response(suite: parsed, key: key, question: challenge)
        let decision = try f.verify(VerifySnapshot(failures: .clear, tokens: [token]), response, challenge: challenge)
        #expect(decision.result.outcome == .rejected)
        #expect(decision.result.note.contains("too few challenges"))
        // New tokens with such a suite are refused with the rule in the message.
        let new = NewToken(kind: .ocra, parameters: OATHParameters(kind: .hotp), seed: key, suite: suite)
        #expect(new.problem?.contains("QN08") == true)
    }

    @Test(arguments: ["OCRA-1:HOTP-SHA1-6:C-QN04", "OCRA-1:HOTP-SHA1-6:QN04-T1M"])
    func aSmallSuiteWithACounterOrTimeKeepsWorking(suite: String) throws {
        let parsed = try OCRASuite(suite)
        #expect(parsed.isSafeAtLogin && !parsed.hasSafeChallengeSpace)
    }

    @Test(arguments: ["OCRA-1:HOTP-SHA1-6:QN08", "OCRA-1:HOTP-SHA1-6:QH07", "OCRA-1:HOTP-SHA1-6:QA06"])
    func theSmallestSafeSpaces(suite: String) throws {
        #expect(try OCRASuite(suite).hasSafeChallengeSpace)
    }

    @Test func aLockedAttemptWritesLikeAMiss() throws {
        let f = try EngineFixture()
        let locked = UserState(failures: 5, lockedUntil: now + 1)
        let decision = try f.verify(VerifySnapshot(failures: locked, tokens: [try f.token()]), f.code(at: step))
        // Counted like a miss (a row that changes: SQLite would not sync an unchanged one); the lock stays as it was.
        let counted = UserState(failures: 6, lockedUntil: now + 1)
        #expect(decision.result == VerifyResult(outcome: .locked, userHasTokens: true, failures: 6, lockedNow: false))
        #expect(decision.writes == [.setFailures(key: "alice", expected: locked, to: counted, at: now)])
        // The shared row of unknown names too.
        let shared = try f.verify(VerifySnapshot(failures: locked), Array("123456".utf8), failureKey: Store.unresolvedUsersKey)
        #expect(shared.writes == [.setFailures(key: Store.unresolvedUsersKey, expected: locked, to: counted, at: now)])
    }

    @Test func theRecoveryCodeDecoyCostsAFullSlowHash() throws {
        // A record verify would refuse unread would cost nothing: the decoy must parse, with the default work.
        let record = try #require(SlowHash.parse(Decoy.slowHashRecord))
        #expect(record.iterations == SlowHash.defaultIterations && record.salt.count == SlowHash.saltLength)
        #expect(!Array("abcd-efgh-jkmn".utf8).withUnsafeBufferPointer { SlowHash.verify($0, against: Decoy.slowHashRecord) })
    }

    @Test func aValidatorChallengeIsNamedByItsID() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QA64")
        let id = SecretBytes(copying: Array("0123456789abcdef0123456789abcdef".utf8))
        let first = try #require(suite.challenge(derivedFrom: id))
        #expect(first == suite.challenge(derivedFrom: SecretBytes(copying: Array("0123456789abcdef0123456789abcdef".utf8))))
        #expect(first.utf8.count == 64 && first.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) })
        #expect(first != suite.challenge(derivedFrom: SecretBytes(copying: Array("0123456789abcdef0123456789abcdee".utf8))))
        let numeric = try #require(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08").challenge(derivedFrom: id))
        #expect(numeric.utf8.count == 8 && numeric.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 })
    }
}
