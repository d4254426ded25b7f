import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPService
@testable import SecurOTPStore

/// What each kind's type answers besides its codes (KindRules): which rows it can use, what
/// a new token must satisfy, the code lengths hosts are told, and the questions listing,
/// resync and offline codes ask. The answers are those the switches on the kind gave before.
@Suite struct KindRulesTests {
    static func row(_ kind: TokenKind, period: Int64) -> TokenRow {
        var row = TokenRow()
        row.serial = "000123"
        row.user = "sam"
        row.kind = kind.rawValue
        row.algorithm = "SHA1"
        row.digits = 6
        row.period = period
        row.suite = kind == .ocra ? "OCRA-1:HOTP-SHA1-6:QN08" : ""
        return row
    }

    @Test("A row without a period is whole for the kinds that have none, damaged for the others")
    func rowsWithoutAPeriod() {
        for kind in [TokenKind.hotp, .ocra] {
            #expect(TokenRecord(row: Self.row(kind, period: 0))?.kind == kind, "\(kind)")
        }
        for kind in [TokenKind.totp, .securid] {
            #expect(TokenRecord(row: Self.row(kind, period: 0)) == nil, "\(kind)")
            #expect(TokenRecord(row: Self.row(kind, period: 301)) == nil, "\(kind)")
            #expect(TokenRecord(row: Self.row(kind, period: 30))?.kind == kind, "\(kind)")
        }
        // Only HOTP reads its parameters as a counter.
        #expect(TokenRecord(row: Self.row(.hotp, period: 0))?.parameters.kind == .hotp)
        #expect(TokenRecord(row: Self.row(.ocra, period: 0))?.parameters.kind == .totp)
    }

    @Test("Each kind checks new tokens by its own rules")
    func enrolmentChecks() throws {
        let short = SecretBytes(count: 9), sixteen = SecretBytes(count: 16)
        #expect(NewToken(kind: .totp, parameters: OATHParameters(kind: .totp), seed: short).problem == "token secret must be 10–128 bytes (got 9)")
        #expect(NewToken(kind: .hotp, parameters: OATHParameters(kind: .hotp, counter: 1 << 53), seed: sixteen).problem?.hasPrefix("HOTP counter") == true)
        #expect(NewToken(kind: .securid, parameters: OATHParameters(kind: .totp, period: 45), seed: sixteen).problem == "SecurID interval must be 30 or 60 s (got 45)")
        #expect(NewToken(kind: .securid, parameters: OATHParameters(kind: .totp), seed: short).problem == "SecurID seed must be 16 bytes (got 9)")
        #expect(NewToken(kind: .ocra, parameters: OATHParameters(kind: .hotp), seed: sixteen, suite: "OCRA-1:HOTP-SHA1-6:QN04").problem?
            .contains("too small a space") == true)
        #expect(NewToken(kind: .ocra, parameters: OATHParameters(kind: .hotp), seed: sixteen, suite: "OCRA-1:HOTP-SHA1-6:QN08").problem == nil)
        #expect(NewToken(kind: .totp, parameters: OATHParameters(kind: .totp), seed: sixteen).problem == nil)
    }

    @Test("Preflight tells the code lengths of typed kinds; OCRA's come with its challenge")
    func promptDigits() throws {
        func record(_ kind: TokenKind, digits: Int) throws -> TokenRecord {
            var row = Self.row(kind, period: 30)
            row.digits = Int64(digits)
            return try #require(TokenRecord(row: row))
        }
        let tokens = [try record(.totp, digits: 6), try record(.hotp, digits: 8), try record(.ocra, digits: 7), try record(.securid, digits: 6)]
        #expect(Preflight.codeDigits(tokens, now: 0) == [6, 8])
    }

    @Test("Listing, resync, challenges and offline codes ask the kind")
    func questions() {
        #expect([TokenKind.hotp, .totp, .securid, .ocra].map(\.countsEvents) == [true, false, false, true])
        #expect([TokenKind.hotp, .totp, .securid, .ocra].map(\.answersChallenges) == [false, false, false, true])
        #expect([TokenKind.hotp, .totp, .securid, .ocra].map(\.hasOfflineCodes) == [true, false, false, false])
        let securid = TokenRecord(row: Self.row(.securid, period: 30))
        #expect(securid.map { $0.kind.algorithmName($0) } == "AES-128")
        #expect(TokenRecord(row: Self.row(.totp, period: 30)).map { $0.kind.algorithmName($0) } == "SHA1")
    }
}
