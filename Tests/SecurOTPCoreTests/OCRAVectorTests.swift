import Testing
import SecurOTPCore

/// RFC 6287 Appendix C: every vector in Tests/Vectors/ocra.json.
@Suite struct OCRAVectorTests {
    nonisolated(unsafe) static let vectors = (try? VectorFile.load("ocra.json"))?.list("ocra") ?? []

    @Test func vectorFileIsPresent() {
        // 54 in Appendix C; all nine suites used there.
        #expect(Self.vectors.count == 54)
        #expect(Set(Self.vectors.compactMap { $0.string("suite") }).count == 9)
    }

    @Test(arguments: OCRAVectorTests.vectors.indices)
    func rfc6287AppendixC(index: Int) throws {
        let vector = Self.vectors[index]
        let suite = try OCRASuite(try #require(vector.string("suite")))
        let key = SecretBytes(copying: Array(try #require(vector.string("key_ascii")).utf8))
        let question = try #require(vector.string("question"))
        let passwordHash = try vector.string("pin_hash").map { try #require(Hex.decode($0)) }
        // The mutual challenge-response vectors (§C.2) pass both 8-character challenges joined.
        let mutual = question.utf8.count > suite.questionLength
        let response = try OCRA.response(
            suite: suite, key: key,
            counter: vector.int("counter").map { UInt64($0) },
            question: question,
            passwordHash: passwordHash,
            timestamp: vector.int("timestamp").map { UInt64($0) },
            mutual: mutual)
        #expect(String(decoding: response, as: UTF8.self) == vector.string("otp"), "suite \(suite), Q \(question)")
    }

    /// The HMAC input of RFC 6287 §C.1's first vector, byte for byte: the suite, 0x00, and the
    /// numeric challenge 00000000 (value 0 → hex "0" → all-zero block).
    @Test func dataInputLayout() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08")
        let message = try OCRA.dataInput(suite: suite, counter: nil, question: "00000000", passwordHash: nil,
                                         session: nil, timestamp: nil)
        let bytes = message.withUnsafeBytes { Array($0) }
        #expect(bytes.count == 23 + 1 + 128)
        #expect(Array(bytes.prefix(23)) == Array("OCRA-1:HOTP-SHA1-6:QN08".utf8))
        #expect(bytes.dropFirst(23).allSatisfy { $0 == 0 })
    }

    /// Each part lands in its place: C, Q, P, S, T.
    @Test func dataInputWithEveryPart() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA256-8:C-QH08-PSHA1-S003-T1M")
        let message = try OCRA.dataInput(suite: suite, counter: 0x0102_0304_0506_0708, question: "abcde",
                                         passwordHash: [UInt8](repeating: 0xaa, count: 20), session: [1, 2, 3],
                                         timestamp: 0x1122_3344_5566_7788, mutual: false)
        let bytes = message.withUnsafeBytes { Array($0) }
        let head = Array(suite.text.utf8) + [0]
        #expect(bytes.count == head.count + 8 + 128 + 20 + 3 + 8)
        var rest = Array(bytes.dropFirst(head.count))
        #expect(Array(rest.prefix(8)) == [1, 2, 3, 4, 5, 6, 7, 8])
        rest.removeFirst(8)
        // Odd-length hex: the last digit fills a high nibble.
        #expect(Array(rest.prefix(3)) == [0xab, 0xcd, 0xe0])
        #expect(rest.dropFirst(3).prefix(125).allSatisfy { $0 == 0 })
        rest.removeFirst(128)
        #expect(Array(rest.prefix(20)) == [UInt8](repeating: 0xaa, count: 20))
        rest.removeFirst(20)
        #expect(Array(rest.prefix(3)) == [1, 2, 3])
        rest.removeFirst(3)
        #expect(rest == [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])
    }

    /// QN: 12345678 = 0xBC614E → "BC614E" left-aligned; 123 = 0x7B; odd hex counts shift by a nibble
    /// (1234 = 0x4D2 → 4D 20).
    @Test func numericQuestionEncoding() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN64")
        #expect(Array(try OCRA.encodeQuestion("12345678", suite: suite).prefix(4)) == [0xbc, 0x61, 0x4e, 0])
        #expect(Array(try OCRA.encodeQuestion("1234", suite: suite).prefix(3)) == [0x4d, 0x20, 0])
        #expect(try OCRA.encodeQuestion("00001234", suite: suite) == OCRA.encodeQuestion("1234", suite: suite))
        #expect(try OCRA.encodeQuestion("0000", suite: suite) == [UInt8](repeating: 0, count: 128))
        // 64 nines: a 213-bit number, still left-aligned.
        let big = try OCRA.encodeQuestion(String(repeating: "9", count: 64), suite: suite)
        #expect(big.count == 128 && big[0] != 0 && big.dropFirst(27).allSatisfy { $0 == 0 })
    }

    @Test func hexQuestionEncoding() throws {
        let suite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QH64")
        #expect(try OCRA.encodeQuestion("abcde", suite: suite) == OCRA.encodeQuestion("abcde0", suite: suite))
        #expect(try OCRA.encodeQuestion("DEADbeef", suite: suite).prefix(5) == [0xde, 0xad, 0xbe, 0xef, 0])
        let full = try OCRA.encodeQuestion(String(repeating: "f", count: 64), suite: suite)
        #expect(full.prefix(32).allSatisfy { $0 == 0xff } && full.dropFirst(32).allSatisfy { $0 == 0 })
    }

    /// t = 0: no truncation, the whole HMAC in lowercase hex; 4–10 digits keep leading zeros.
    @Test func digitsZeroThroughTen() throws {
        let key = SecretBytes(copying: Array("12345678901234567890".utf8))
        for (name, length) in [("SHA1", 20), ("SHA256", 32), ("SHA512", 64)] {
            let suite = try OCRASuite("OCRA-1:HOTP-\(name)-0:QN08")
            let full = try OCRA.response(suite: suite, key: key, question: "12345678")
            let message = try OCRA.dataInput(suite: suite, counter: nil, question: "12345678", passwordHash: nil,
                                             session: nil, timestamp: nil)
            let mac = message.withUnsafeBytes { HMAC.authenticate(suite.algorithm, key: key, message: $0) }
            #expect(mac.count == length)
            #expect(String(decoding: full, as: UTF8.self) == Hex.encode(mac))
        }
        for digits in [4, 5, 6, 7, 8, 9, 10] {
            let code = try OCRA.response(suite: OCRASuite("OCRA-1:HOTP-SHA1-\(digits):QN08"), key: key, question: "00000000")
            #expect(code.count == digits && code.allSatisfy { (48...57).contains($0) })
        }
    }
}
