import Foundation
import Testing
@testable import SecurOTPCore
@testable import SecurOTPSecurID
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// SecurID tokens, PIN modes, new-PIN and next-tokencode outcomes, recovery codes and resync,
/// checked against the store with a fixed clock.
@Suite struct TokenKindTests {
    let t0: Int64 = 1_800_000_010
    let serial = "000123456789"

    func securID(_ temp: TemporaryStore, pinMode: PINMode, digits: Int = 6) throws -> SecretBytes {
        let seed = try #require(SecretBytes.random(count: 16))
        _ = try temp.store.add([NewToken(kind: .securid, parameters: OATHParameters(kind: .totp, digits: digits, period: 30), seed: seed,
                                         serial: serial, pinMode: pinMode, source: "ctf")], user: "sam", maxTokens: 10, now: t0)
        return seed
    }

    func tokencode(_ seed: SecretBytes, at time: Int64, digits: Int = 6) -> [UInt8] {
        SecurIDToken(serial: serial, seed: seed, parameters: SecurIDParameters(digits: digits, interval: 30, addsPIN: false)).tokencode(at: time)
    }

    func setPIN(_ temp: TemporaryStore, _ pin: String) throws {
        try Array(pin.utf8).withUnsafeBufferPointer { try temp.store.setPIN(user: "sam", serial: serial, pin: $0) }
    }

    @Test func pinlessSecurIDAcceptsTheTokencodeOnce() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .none)
        let code = tokencode(seed, at: t0)
        #expect(try temp.store.verify("sam", code, now: t0).outcome == .accepted(serial: serial, digits: 6))
        #expect(try temp.store.verify("sam", code, now: t0).outcome == .replayed(serial: serial))
    }

    @Test func fobStylePINGoesInFrontOfTheCode() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .prefix)
        // No PIN yet: the bare tokencode starts new-PIN mode and is used up.
        #expect(try temp.store.verify("sam", tokencode(seed, at: t0), now: t0).outcome == .newPINRequired(serial: serial, pinMode: .prefix))
        try setPIN(temp, "ab12")
        #expect(try temp.store.verify("sam", Array("ab12".utf8) + tokencode(seed, at: t0 + 30), now: t0 + 30).outcome == .accepted(serial: serial, digits: 10))
        let wrongPIN = try temp.store.verify("sam", Array("ab13".utf8) + tokencode(seed, at: t0 + 60), now: t0 + 60)
        #expect(wrongPIN.outcome == .rejected && wrongPIN.note.contains("wrong PIN"))
        #expect(try temp.store.verify("sam", tokencode(seed, at: t0 + 90), now: t0 + 90).outcome == .rejected)
    }

    @Test func pinpadStyleAddsThePINIntoTheCode() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .addedByToken, digits: 8)
        try setPIN(temp, "1234")
        let plain = tokencode(seed, at: t0, digits: 8)
        let passcode = SecurIDToken.addPIN(Array("1234".utf8), to: plain)
        #expect(try temp.store.verify("sam", passcode, now: t0).outcome == .accepted(serial: serial, digits: 8))
        let other = SecurIDToken.addPIN(Array("1235".utf8), to: tokencode(seed, at: t0 + 30, digits: 8))
        #expect(try temp.store.verify("sam", other, now: t0 + 30).outcome == .rejected)
        #expect(throws: StoreError(.invalidInput, "")) { try setPIN(temp, "12ab") } // PINPad PINs are digits
        #expect(throws: StoreError(.invalidInput, "")) { try setPIN(temp, "123") }
    }

    @Test func requirePINForcesAChangeAfterTheOldPIN() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .prefix)
        try setPIN(temp, "1111")
        try temp.store.requirePIN(user: "sam", serial: serial)
        #expect(try temp.store.verify("sam", Array("1111".utf8) + tokencode(seed, at: t0), now: t0).outcome == .newPINRequired(serial: serial, pinMode: .prefix))
        try setPIN(temp, "2222")
        #expect(try temp.store.verify("sam", Array("2222".utf8) + tokencode(seed, at: t0 + 30), now: t0 + 30).outcome == .accepted(serial: serial, digits: 10))
    }

    @Test func nextTokencodeModeLearnsTheDrift() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .none)
        let ahead = t0 + 10 * 30 // the token's clock runs 10 steps ahead
        let first = try temp.store.verify("sam", tokencode(seed, at: ahead), now: t0)
        guard case .nextCodeRequired(let found, let position) = first.outcome else {
            Issue.record("expected next-tokencode mode, got \(first.outcome)")
            return
        }
        #expect(found == serial)
        let wrong = try tokencode(seed, at: ahead + 60).withUnsafeBufferPointer {
            try temp.store.verifyNextCode(user: "sam", serial: serial, position: position, input: $0, policy: VerifyPolicy(), now: t0 + 5)
        }
        #expect(wrong.outcome == .rejected)
        let next = try tokencode(seed, at: ahead + 30).withUnsafeBufferPointer {
            try temp.store.verifyNextCode(user: "sam", serial: serial, position: position, input: $0, policy: VerifyPolicy(), now: t0 + 5)
        }
        #expect(next.outcome == .accepted(serial: serial, digits: 6))
        #expect(try temp.store.token(user: "sam", serial: serial).drift == 11)
        // From now on the drifted window applies: the token's code two steps later is accepted directly.
        #expect(try temp.store.verify("sam", tokencode(seed, at: ahead + 90), now: t0 + 60).outcome == .accepted(serial: serial, digits: 6))
    }

    @Test func nextCodeAfterFailures() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .none)
        var policy = VerifyPolicy()
        policy.nextCodeAfter = 2
        _ = try temp.store.verify("sam", Array("000000".utf8) == tokencode(seed, at: t0) ? Array("111111".utf8) : Array("000000".utf8), policy: policy, now: t0)
        _ = try temp.store.verify("sam", Array("00000x".utf8), policy: policy, now: t0)
        #expect(try temp.store.verify("sam", tokencode(seed, at: t0), policy: policy, now: t0).outcome == .nextCodeRequired(serial: serial, position: t0 / 30))
    }

    @Test func expiredTokensAreRefusedAtImportAndLogin() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 20))
        #expect(throws: StoreError(.invalidInput, "")) {
            try temp.store.add([NewToken(kind: .totp, parameters: OATHParameters(kind: .totp), seed: seed, expires: t0 - 1)], user: "e", maxTokens: 10, now: t0)
        }
        _ = try temp.store.add([NewToken(kind: .totp, parameters: OATHParameters(kind: .totp), seed: seed, expires: t0 + 60)], user: "e", maxTokens: 10, now: t0)
        let code = OTP.totp(secret: seed, unixTime: t0 + 60, period: 30, digits: 6, algorithm: .sha1)
        let result = try temp.store.verify("e", code, now: t0 + 60)
        #expect(result.outcome == .rejected && result.note.contains("expired"))
    }

    @Test func recoveryCodesWorkOnceEach() throws {
        let temp = try TemporaryStore()
        let codes = try temp.store.generateRecoveryCodes(user: "r", count: 3, now: t0)
        #expect(codes.count == 3 && Set(codes).count == 3)
        #expect(codes.allSatisfy { $0.count == 14 })
        #expect(try temp.store.verify("r", Array(codes[1].uppercased().utf8), now: t0).outcome == .acceptedRecoveryCode(remaining: 2))
        #expect(try temp.store.verify("r", Array(codes[1].utf8), now: t0).outcome == .rejected)
        // A new set replaces the old one.
        _ = try temp.store.generateRecoveryCodes(user: "r", count: 1, now: t0)
        #expect(try temp.store.verify("r", Array(codes[0].utf8), now: t0).outcome == .rejected)
    }

    @Test func adminResyncFindsTwoConsecutiveCodes() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .none)
        let behind = t0 - 200 * 30
        let result = try temp.store.resync(user: "sam", serial: serial, first: tokencode(seed, at: behind), second: tokencode(seed, at: behind + 30), now: t0)
        #expect(result.drift == -199)
        #expect(throws: StoreError(.invalidInput, "")) {
            try temp.store.resync(user: "sam", serial: serial, first: tokencode(seed, at: t0), second: tokencode(seed, at: t0 + 90), now: t0)
        }
    }
}

extension TokenKindTests {
    @Test func pinpadNewPINModeThenPasscodeWithTheNewPIN() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .addedByToken, digits: 6)
        #expect(try temp.store.verify("sam", tokencode(seed, at: t0), now: t0).outcome == .newPINRequired(serial: serial, pinMode: .addedByToken))
        try setPIN(temp, "2468")
        let passcode = SecurIDToken.addPIN(Array("2468".utf8), to: tokencode(seed, at: t0 + 30))
        #expect(try temp.store.verify("sam", passcode, now: t0 + 5).outcome == .accepted(serial: serial, digits: 6))
    }
}

/// Found by fuzz/harnesses/passcode.swift: a code that could not be computed (empty) matched an
/// empty answer, or a PIN with nothing after it. The next-code dialogue of an OCRA token (which
/// has no next code) accepted an empty answer, so `next_code_after` could be passed by Enter.
extension TokenKindTests {
    func ocra(_ temp: TemporaryStore) throws -> (serial: String, seed: SecretBytes, suite: OCRASuite) {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08")
        let seed = SecretBytes(copying: Array("12345678901234567890".utf8))
        let record = try temp.store.add([NewToken(kind: .ocra, parameters: OATHParameters(kind: .hotp, digits: 6), seed: seed,
                                                  suite: suite.text)], user: "olga", maxTokens: 10, now: t0)[0]
        return (record.serial, seed, suite)
    }

    @Test func emptyCodesNeverMatch() throws {
        let pinHash = try #require(Array("1234".utf8).withUnsafeBufferPointer { SlowHash.hash($0, iterations: 10_000) })
        let cases: [(PINMode, String)] = [(.none, ""), (.prefix, "1234"), (.addedByToken, "")]
        for (mode, answer) in cases {
            let found = Array(answer.utf8).withUnsafeBufferPointer {
                PasscodeMatcher(mode: mode, pinHash: pinHash, pinLength: 4, passcode: $0).find(in: [(position: Int64(7), code: [UInt8]())])
            }
            #expect(found == .none, "\(mode) with \"\(answer)\"")
        }
    }

    /// PBKDF2's HMAC pads its key with zeros, so "1234" and "1234" followed by NULs hash alike;
    /// only a PIN the PIN rules allow is compared.
    @Test func pinWithTrailingNULsIsNotThePIN() throws {
        let temp = try TemporaryStore()
        let seed = try securID(temp, pinMode: .prefix)
        try setPIN(temp, "1234")
        let code = tokencode(seed, at: t0)
        #expect(try temp.store.verify("sam", Array("1234".utf8) + [0, 0, 0] + code, now: t0).outcome == .rejected)
        #expect(try temp.store.verify("sam", Array("1234".utf8) + code, now: t0).outcome == .accepted(serial: serial, digits: 4 + code.count))
    }

    @Test func ocraNextCodeDialogueAcceptsNothing() throws {
        let temp = try TemporaryStore()
        let token = try ocra(temp)
        let result = try [UInt8]().withUnsafeBufferPointer {
            try temp.store.verifyNextCode(user: "olga", serial: token.serial, position: 0, input: $0, policy: VerifyPolicy(), now: t0)
        }
        #expect(result.outcome == .rejected)
    }

    @Test func nextCodeAfterDoesNotApplyToOCRA() throws {
        let temp = try TemporaryStore()
        let token = try ocra(temp)
        var policy = VerifyPolicy()
        policy.nextCodeAfter = 1
        let challenge = "12345678"
        let wrong = try Array("000000".utf8).withUnsafeBufferPointer {
            try temp.store.verify(user: "olga", input: $0, codeAtEnd: false, policy: policy, now: t0, challenge: challenge)
        }
        #expect(wrong.outcome == .rejected && wrong.failures == 1)
        let response = try OCRA.response(suite: token.suite, key: token.seed, question: challenge)
        let right = try response.withUnsafeBufferPointer {
            try temp.store.verify(user: "olga", input: $0, codeAtEnd: false, policy: policy, now: t0, challenge: challenge)
        }
        #expect(right.outcome == .accepted(serial: token.serial, digits: 6))
    }
}
