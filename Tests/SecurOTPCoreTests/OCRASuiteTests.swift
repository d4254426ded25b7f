import Testing
import SecurOTPCore

/// Suite parsing, input checking and challenges: bad input is a typed error, never a trap.
@Suite struct OCRASuiteTests {
    @Test func parsesTheTypicalSuites() throws {
        let simple = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08")
        #expect(simple.algorithm == .sha1 && simple.digits == 6 && !simple.usesCounter)
        #expect(simple.questionFormat == .numeric && simple.questionLength == 8)
        #expect(simple.passwordHash == nil && simple.sessionLength == nil && simple.timeStepSeconds == nil)
        #expect(simple.description == "OCRA-1:HOTP-SHA1-6:QN08")

        let counted = try OCRASuite("OCRA-1:HOTP-SHA256-8:C-QN08-PSHA1")
        #expect(counted.algorithm == .sha256 && counted.digits == 8 && counted.usesCounter && counted.passwordHash == .sha1)

        let timed = try OCRASuite("OCRA-1:HOTP-SHA512-8:QN08-T1M")
        #expect(timed.algorithm == .sha512 && timed.timeStepSeconds == 60 && !timed.usesCounter)

        let alpha = try OCRASuite("OCRA-1:HOTP-SHA256-8:QA08")
        #expect(alpha.questionFormat == .alphanumeric && alpha.questionLength == 8)

        let counter512 = try OCRASuite("OCRA-1:HOTP-SHA512-8:C-QN08")
        #expect(counter512.usesCounter && counter512.algorithm == .sha512)
    }

    @Test func parsesEveryDataInput() throws {
        let all = try OCRASuite("OCRA-1:HOTP-SHA512-10:C-QH64-PSHA512-S512-T48H")
        #expect(all.digits == 10 && all.usesCounter && all.questionFormat == .hexadecimal && all.questionLength == 64)
        #expect(all.passwordHash == .sha512 && all.sessionLength == 512 && all.timeStepSeconds == 48 * 3600)

        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-0:QA04").digits == 0)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-4:QN04-PSHA256").passwordHash == .sha256)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-P").passwordHash == .sha1)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-S").sessionLength == 64)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-S001").sessionLength == 1)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-T").timeStepSeconds == 60)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-T30S").timeStepSeconds == 30)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-T59M").timeStepSeconds == 59 * 60)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-T1H").timeStepSeconds == 3600)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-S064-T1M").sessionLength == 64)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:C-QA64").questionLength == 64)
    }

    static let malformedSuites: [String] = [
        "", ":", "::", "OCRA-1", "OCRA-1:HOTP-SHA1-6", "OCRA-1:HOTP-SHA1-6:", "OCRA-1:HOTP-SHA1-6:QN08:",
        "OCRA-2:HOTP-SHA1-6:QN08", "ocra-1:HOTP-SHA1-6:QN08", " OCRA-1:HOTP-SHA1-6:QN08", "OCRA-1:HOTP-SHA1-6:QN08 ",
        "OCRA-1:TOTP-SHA1-6:QN08", "OCRA-1:HOTP-MD5-6:QN08", "OCRA-1:HOTP-sha1-6:QN08", "OCRA-1:HOTP-SHA1:QN08",
        "OCRA-1:HOTP-SHA1-6-7:QN08", "OCRA-1:HOTP--6:QN08", "OCRA-1:HOTP-SHA1-:QN08",
        "OCRA-1:HOTP-SHA1-3:QN08", "OCRA-1:HOTP-SHA1-1:QN08", "OCRA-1:HOTP-SHA1-11:QN08", "OCRA-1:HOTP-SHA1-006:QN08",
        "OCRA-1:HOTP-SHA1-x:QN08", "OCRA-1:HOTP-SHA1-+6:QN08", "OCRA-1:HOTP-SHA1-99999999999999999999:QN08",
        "OCRA-1:HOTP-SHA1-6:C", "OCRA-1:HOTP-SHA1-6:QX08", "OCRA-1:HOTP-SHA1-6:QN03", "OCRA-1:HOTP-SHA1-6:QN65",
        "OCRA-1:HOTP-SHA1-6:QN8", "OCRA-1:HOTP-SHA1-6:QN008", "OCRA-1:HOTP-SHA1-6:Q", "OCRA-1:HOTP-SHA1-6:QN",
        "OCRA-1:HOTP-SHA1-6:qn08", "OCRA-1:HOTP-SHA1-6:QN-8", "OCRA-1:HOTP-SHA1-6:QN08-", "OCRA-1:HOTP-SHA1-6:-QN08",
        "OCRA-1:HOTP-SHA1-6:QN08--PSHA1", "OCRA-1:HOTP-SHA1-6:QN08-C", "OCRA-1:HOTP-SHA1-6:C-C-QN08",
        "OCRA-1:HOTP-SHA1-6:QN08-QN08", "OCRA-1:HOTP-SHA1-6:CX-QN08", "OCRA-1:HOTP-SHA1-6:QN08-PMD5",
        "OCRA-1:HOTP-SHA1-6:QN08-PSHA384", "OCRA-1:HOTP-SHA1-6:QN08-S64", "OCRA-1:HOTP-SHA1-6:QN08-S0064",
        "OCRA-1:HOTP-SHA1-6:QN08-S000", "OCRA-1:HOTP-SHA1-6:QN08-SABC", "OCRA-1:HOTP-SHA1-6:QN08-T0M",
        "OCRA-1:HOTP-SHA1-6:QN08-T60S", "OCRA-1:HOTP-SHA1-6:QN08-T60M", "OCRA-1:HOTP-SHA1-6:QN08-T49H",
        "OCRA-1:HOTP-SHA1-6:QN08-T0H", "OCRA-1:HOTP-SHA1-6:QN08-T1D", "OCRA-1:HOTP-SHA1-6:QN08-TM",
        "OCRA-1:HOTP-SHA1-6:QN08-T100S", "OCRA-1:HOTP-SHA1-6:QN08-T1H30M", "OCRA-1:HOTP-SHA1-6:QN08-T1M-S064",
        "OCRA-1:HOTP-SHA1-6:QN08-S064-PSHA1", "OCRA-1:HOTP-SHA1-6:QN08-T1M-T1M", "OCRA-1:HOTP-SHA1-6:PSHA1",
        "OCRA-1:HOTP-SHA1-6:QN08-X", "OCRA-1:HOTP-SHA1-6:QN08\u{0}", "OCRA-1:HOTP-SHA1-6:QN０８",
        "OCRA-1:HOTP-SHA1-6:QN08-PSHA1-S064-T1M-" + String(repeating: "C", count: 40),
    ]

    @Test(arguments: OCRASuiteTests.malformedSuites)
    func refusesMalformedSuites(text: String) {
        #expect(throws: OCRAError(.suite, "")) { try OCRASuite(text) }
        do {
            _ = try OCRASuite(text)
        } catch {
            #expect(!error.message.isEmpty)
        }
    }

    @Test func errorMessagesNameTheProblem() {
        func message(_ text: String) -> String {
            do { _ = try OCRASuite(text); return "" } catch { return error.description }
        }
        #expect(message("OCRA-1:HOTP-SHA1-6").contains("three parts"))
        #expect(message("OCRA-2:HOTP-SHA1-6:QN08").contains("OCRA-2"))
        #expect(message("OCRA-1:HOTP-MD5-6:QN08").contains("MD5"))
        #expect(message("OCRA-1:HOTP-SHA1-3:QN08").contains("4–10"))
        #expect(message("OCRA-1:HOTP-SHA1-6:QN65").contains("QN65"))
        #expect(message("OCRA-1:HOTP-SHA1-6:QN08-T1M-S064").contains("order"))
        #expect(message("OCRA-1:HOTP-SHA1-6:C").contains("no challenge"))
        #expect(message("OCRA-1:HOTP-SHA1-6:QN08-T49H").contains("1–48H"))
    }

    // MARK: - Inputs against the suite

    nonisolated(unsafe) static let key = SecretBytes(copying: Array("12345678901234567890".utf8))

    /// The error's code, or nil when `body` succeeds.
    private func code(of body: () throws -> [UInt8]) -> OCRAError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as OCRAError {
            return error.code
        } catch {
            Issue.record("not an OCRAError: \(error)")
            return nil
        }
    }

    @Test func questionLengthIsChecked() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08")
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "") } == .question)
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "123") } == .question)
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "1234") } == nil)
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "12345678") } == nil)
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "123456789") } == .question)
        // Mutual: two challenges joined, 8 to 16 characters.
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "1234567", mutual: true) } == .question)
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "1234567812345678", mutual: true) } == nil)
        #expect(code { try OCRA.response(suite: suite, key: Self.key, question: "12345678123456781", mutual: true) } == .question)
        let longest = try OCRASuite("OCRA-1:HOTP-SHA1-6:QA64")
        let text = String(repeating: "Zz9", count: 43)
        #expect(code { try OCRA.response(suite: longest, key: Self.key, question: String(text.prefix(128)), mutual: true) } == nil)
        #expect(code { try OCRA.response(suite: longest, key: Self.key, question: text, mutual: true) } == .question)
        #expect(code { try OCRA.response(suite: longest, key: Self.key, question: String(repeating: "a", count: 100_000)) } == .question)
    }

    @Test func questionCharactersAreChecked() throws {
        let numeric = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08")
        let alpha = try OCRASuite("OCRA-1:HOTP-SHA1-6:QA08")
        let hex = try OCRASuite("OCRA-1:HOTP-SHA1-6:QH08")
        for bad in ["1234567a", "-1234567", "+1234567", "1234 567", "12345.67", "１２３４", "0x123456", "1234\u{0}"] {
            #expect(code { try OCRA.response(suite: numeric, key: Self.key, question: bad) } == .question, "\(bad)")
        }
        for bad in ["abc defg", "abc-defg", "abcdéf", "abc\u{0}def", "abc\ndef", "ab_cd", "ab~cd", "😀😀"] {
            #expect(code { try OCRA.response(suite: alpha, key: Self.key, question: bad) } == .question, "\(bad)")
        }
        for bad in ["abcdefg", "12345g", "0x1234", "12 34", "ＡＢＣＤ"] {
            #expect(code { try OCRA.response(suite: hex, key: Self.key, question: bad) } == .question, "\(bad)")
        }
        #expect(code { try OCRA.response(suite: alpha, key: Self.key, question: "AZaz09Qq") } == nil)
        #expect(code { try OCRA.response(suite: hex, key: Self.key, question: "09afAF") } == nil)
    }

    @Test func everyInputMustMatchTheSuite() throws {
        let plain = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08")
        let full = try OCRASuite("OCRA-1:HOTP-SHA256-8:C-QN08-PSHA256-S016-T30S")
        let pin = [UInt8](repeating: 7, count: 32)
        let session = [UInt8](repeating: 9, count: 16)
        func run(_ suite: OCRASuite, counter: UInt64? = 1, passwordHash: [UInt8]? = pin, session: [UInt8]? = session,
                 timestamp: UInt64? = 1, key: SecretBytes = OCRASuiteTests.key) -> OCRAError.Code? {
            code {
                try OCRA.response(suite: suite, key: key, counter: counter, question: "1234", passwordHash: passwordHash,
                                  session: session, timestamp: timestamp)
            }
        }
        #expect(run(full) == nil)
        #expect(run(full, counter: nil) == .counter)
        #expect(run(full, passwordHash: nil) == .passwordHash)
        #expect(run(full, passwordHash: Array(pin.prefix(20))) == .passwordHash)
        #expect(run(full, passwordHash: pin + [0]) == .passwordHash)
        #expect(run(full, passwordHash: []) == .passwordHash)
        #expect(run(full, session: nil) == .session)
        #expect(run(full, session: Array(session.prefix(15))) == .session)
        #expect(run(full, session: session + [0]) == .session)
        #expect(run(full, timestamp: nil) == .timestamp)
        #expect(run(full, key: SecretBytes(count: 0)) == .key)
        #expect(run(plain, counter: nil, passwordHash: nil, session: nil, timestamp: nil) == nil)
        #expect(run(plain, passwordHash: nil, session: nil, timestamp: nil) == .counter)
        #expect(run(plain, counter: nil, session: nil, timestamp: nil) == .passwordHash)
        #expect(run(plain, counter: nil, passwordHash: nil, timestamp: nil) == .session)
        #expect(run(plain, counter: nil, passwordHash: nil, session: nil) == .timestamp)
        // Extreme values are fine: they are only bytes.
        #expect(run(full, counter: .max, timestamp: .max) == nil)
    }

    @Test func responseDependsOnEveryInput() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA256-10:C-QA08-PSHA1-S004-T1M")
        func response(counter: UInt64 = 1, question: String = "abcd", pin: UInt8 = 1, session: UInt8 = 1,
                      time: UInt64 = 1) throws -> [UInt8] {
            try OCRA.response(suite: suite, key: Self.key, counter: counter, question: question,
                              passwordHash: [UInt8](repeating: pin, count: 20), session: [UInt8](repeating: session, count: 4),
                              timestamp: time)
        }
        let base = try response()
        #expect(try response(counter: 2) != base)
        #expect(try response(question: "abce") != base)
        #expect(try response(question: "ABCD") != base)
        #expect(try response(pin: 2) != base)
        #expect(try response(session: 2) != base)
        #expect(try response(time: 2) != base)
        #expect(try response() == base)
    }

    // MARK: - Time steps and challenges

    @Test func timeStepOfTSuites() throws {
        let minute = try OCRASuite("OCRA-1:HOTP-SHA512-8:QN08-T1M")
        // RFC 6287 Appendix C uses T = 0x132d0b6 = 20107446 minutes: Mar 25 2008, 12:06 UTC
        // (this time is 30 s into that minute).
        #expect(minute.timeStep(unixTime: 1_206_446_790) == 20_107_446)
        #expect(minute.timeStep(unixTime: 59) == 0)
        #expect(minute.timeStep(unixTime: 60) == 1)
        #expect(minute.timeStep(unixTime: -1) == nil)
        #expect(minute.timeStep(unixTime: .max) == UInt64(Int64.max / 60))
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-T30S").timeStep(unixTime: 90) == 3)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08-T2H").timeStep(unixTime: 7200 * 5 + 1) == 5)
        #expect(try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08").timeStep(unixTime: 1000) == nil)
    }

    @Test(arguments: ["OCRA-1:HOTP-SHA1-6:QN08", "OCRA-1:HOTP-SHA256-8:QA10", "OCRA-1:HOTP-SHA1-6:QH40",
                      "OCRA-1:HOTP-SHA1-6:QN64", "OCRA-1:HOTP-SHA1-6:QA04"])
    func randomChallengesFitTheirSuite(text: String) throws {
        let suite = try OCRASuite(text)
        var seen = Set<String>()
        for _ in 0..<50 {
            let challenge = try #require(suite.randomChallenge())
            #expect(challenge.utf8.count == suite.questionLength)
            for byte in challenge.utf8 {
                switch suite.questionFormat {
                case .numeric: #expect((48...57).contains(byte))
                case .hexadecimal: #expect((48...57).contains(byte) || (97...102).contains(byte))
                case .alphanumeric: #expect((48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte))
                }
            }
            #expect(throws: Never.self) { try OCRA.response(suite: suite, key: Self.key, question: challenge) }
            seen.insert(challenge)
        }
        #expect(seen.count > 45) // the smallest space here, QA04, has 62^4 challenges
    }

    @Test func randomNumericChallengesAreUnbiased() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN64")
        var counts = [Int](repeating: 0, count: 10)
        for _ in 0..<200 {
            for byte in try #require(suite.randomChallenge()).utf8 { counts[Int(byte - 48)] += 1 }
        }
        // 12,800 digits, about 1,280 of each: a sanity check of the spread (±5σ).
        #expect(counts.allSatisfy { (1_100...1_460).contains($0) }, "\(counts)")
    }

    // MARK: - Never a trap

    /// Random and mutated suite strings: each either parses or throws `.suite`.
    @Test func fuzzedSuitesNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        let seeds = Array("OCRA-1:HOTP-SHA512-10:C-QH64-PSHA512-S512-T48H".utf8)
        let alphabet = Array("OCRAHTPSQNCM0123456789-:".utf8) + [0, 0xff, 0x20, 0xc3, 0xa9]
        var parsed = 0
        for round in 0..<5_000 {
            var bytes = seeds
            if round % 2 == 0 {
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: bytes[index] = alphabet.randomElement(using: &generator) ?? 0
                    case 1: bytes.remove(at: index)
                    default: bytes.insert(alphabet.randomElement(using: &generator) ?? 0, at: index)
                    }
                    if bytes.isEmpty { bytes = seeds }
                }
            } else {
                bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in
                    alphabet.randomElement(using: &generator) ?? 0
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            do {
                let suite = try OCRASuite(text)
                parsed += 1
                #expect(suite.text == text)
            } catch {
                #expect(error.code == .suite)
            }
        }
        #expect(parsed > 0)
    }

    /// Random questions for every format: a response or a `.question` error, nothing else.
    @Test func fuzzedQuestionsNeverTrap() throws {
        var generator = SystemRandomNumberGenerator()
        let suites = try ["OCRA-1:HOTP-SHA1-6:QN08", "OCRA-1:HOTP-SHA1-6:QA64", "OCRA-1:HOTP-SHA1-6:QH16",
                          "OCRA-1:HOTP-SHA1-6:QN64"].map { try OCRASuite($0) }
        let alphabet = Array("0123456789abcdefABCDEFxyzXYZ -_.".utf8) + [0, 0x7f, 0xc3, 0xa9, 0xff]
        for _ in 0..<3_000 {
            let count = Int.random(in: 0...140, using: &generator)
            let text = String(decoding: (0..<count).map { _ in alphabet.randomElement(using: &generator) ?? 0 }, as: UTF8.self)
            for suite in suites {
                for mutual in [false, true] {
                    do {
                        let response = try OCRA.response(suite: suite, key: Self.key, question: text, mutual: mutual)
                        #expect(response.count == 6)
                    } catch {
                        #expect(error.code == .question)
                    }
                }
            }
        }
    }
}
