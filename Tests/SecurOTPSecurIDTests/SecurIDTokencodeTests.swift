import Foundation
import Testing
import SecurOTPCore
@testable import SecurOTPSecurID

@Suite struct SecurIDTokencodeTests {
    static let sdtidVectorIDs: [String] = SecurIDVectorFile.vectors
        .filter { $0["kind"] as? String == "sdtid" }.compactMap { $0["id"] as? String }

    @Test func vectorFileIsPresent() throws {
        #expect(SecurIDVectorFile.tokens["A"] != nil && SecurIDVectorFile.tokens["B"] != nil,
                "Tests/Vectors/securid.json missing or unreadable at \(SecurIDVectorFile.url.path)")
        #expect(Self.sdtidVectorIDs.count >= 30)
        #expect(SecurIDVectorFile.vectors.count >= 50)
    }

    // MARK: Primitives

    @Test func sidHashExamples() throws {
        let examples = try #require(SecurIDVectorFile.intermediates["sid_hash_examples"] as? [String: String])
        #expect(examples.count >= 8)
        for (input, output) in examples {
            let message = try #require(Hex.decode(input))
            let hash = SecurIDCrypto.sidHash(message)
            #expect(Hex.encode(hash) == output, "SID-hash of \(input.isEmpty ? "<empty>" : input)")
            let expected15 = try #require(Hex.decode(output))
            #expect(SecurIDCrypto.short15(message) == (UInt16(expected15[0]) << 8 | UInt16(expected15[1])) >> 1)
        }
    }

    @Test func cbcMACMatchesChainedAES() throws {
        let key = [UInt8](0..<16)
        let iv = [UInt8](repeating: 0x5A, count: 16)
        let data = [UInt8](0..<20)
        // Two blocks, the second zero-padded.
        var first = zip(iv, data[0..<16]).map { $0 ^ $1 }
        first = SecurIDCrypto.encryptBlock(key: key, first)
        let secondBlock = Array(data[16..<20]) + [UInt8](repeating: 0, count: 12)
        let expected = SecurIDCrypto.encryptBlock(key: key, zip(first, secondBlock).map { $0 ^ $1 })
        #expect(SecurIDCrypto.cbcMAC(key: key, iv: iv, data: data) == expected)
        #expect(SecurIDCrypto.cbcMAC(key: key, iv: iv, data: []) == iv)
        #expect(SecurIDCrypto.cbcMAC(key: [1, 2, 3], iv: iv, data: data).isEmpty)
        #expect(SecurIDCrypto.encryptBlock(key: key, [1]).isEmpty)
        #expect(SecurIDCrypto.decryptBlock(key: key, SecurIDCrypto.encryptBlock(key: key, Array(data[0..<16]))) == Array(data[0..<16]))
    }

    // MARK: Tokencode algorithm, step by step (intermediates.tokencode_A / _B)

    @Test(arguments: ["tokencode_A", "tokencode_B"])
    func tokencodeIntermediates(name: String) throws {
        let steps = try #require(SecurIDVectorFile.intermediates[name] as? [String: Any])
        let seed = try #require((steps["seed"] as? String).flatMap(Hex.decode))
        let parameters = SecurIDParameters(digits: try #require(steps["digits"] as? Int),
                                           interval: try #require(steps["interval"] as? Int), addsPIN: true)
        let token = SecurIDToken(serial: try #require(steps["serial"] as? String), seed: SecretBytes(copying: seed),
                                 parameters: parameters)
        let time = Int64(try #require(steps["time"] as? Int))

        #expect(token.serialBCD().map(Hex.encode) == steps["serial_bcd"] as? String)
        let chain = try #require(steps["chain"] as? [[String: Any]])
        let outputs = token.chainOutput(at: time)
        #expect(outputs.count == chain.count)
        for (step, expected) in zip(outputs, chain) {
            #expect(Hex.encode(step) == expected["output"] as? String, "after \(expected["bcd_bytes_used"] ?? "?") BCD bytes")
            // The vector's plaintext block under the vector's key gives the same output: our
            // block layout (time BCD, 0xAA fill, serial BCD, 0xBB fill) is the vector's.
            let key = try #require((expected["aes_key"] as? String).flatMap(Hex.decode))
            let block = try #require((expected["plaintext_block"] as? String).flatMap(Hex.decode))
            #expect(SecurIDCrypto.encryptBlock(key: key, block) == step)
        }
        let index = try #require(steps["word_index"] as? Int)
        let last = try #require(outputs.last)
        let word = last[(4 * index)..<(4 * index + 4)].reduce(0) { $0 << 8 | Int($1) }
        #expect(word == steps["word"] as? Int)
        #expect(token.tokencode(at: time).ascii == steps["raw_code"] as? String)
        let pin = Array(try #require(steps["pin"] as? String).utf8)
        #expect(token.passcode(at: time, pin: pin).ascii == steps["passcode_addpin"] as? String)
    }

    // MARK: Every stoken tokencode vector for tokens A and B

    @Test(arguments: SecurIDTokencodeTests.sdtidVectorIDs)
    func tokencodeVector(id: String) throws {
        let vector = try #require(SecurIDVectorFile.vector(id: id))
        let token = try #require(SecurIDVectorFile.token(String(id.prefix(1))))
        let time = Int64(try #require(vector["time"] as? Int))
        let pin = Array(try #require(vector["pin"] as? String).utf8)
        let expected = try #require(vector["tokencode"] as? String)
        #expect(token.isWellFormed)
        #expect(token.passcode(at: time, pin: pin).ascii == expected)
        #expect(SecurIDToken.addPIN(pin, to: token.tokencode(at: time)).ascii == expected)
        // Subtracting the PIN gives back the plain tokencode.
        #expect(SecurIDToken.subtractPIN(pin, from: Array(expected.utf8)) == token.tokencode(at: time))
        if id.contains("-next-") {
            // "next" vectors: the code one interval after the time in their id.
            let base = try #require(Int64(id.split(separator: "-").last ?? ""))
            #expect(token.nextTokencode(at: base).ascii == expected)
            #expect(time == base + Int64(token.parameters.interval))
        }
        if pin.allSatisfy({ $0 == UInt8(ascii: "0") }) {
            #expect(token.tokencode(at: time).ascii == expected)
        }
    }

    // MARK: PINs

    @Test func pinArithmetic() {
        func add(_ pin: String, _ code: String) -> String { SecurIDToken.addPIN(Array(pin.utf8), to: Array(code.utf8)).ascii }
        func sub(_ pin: String, _ code: String) -> String { SecurIDToken.subtractPIN(Array(pin.utf8), from: Array(code.utf8)).ascii }
        #expect(add("1234", "567891") == "568025")
        #expect(add("0000", "123456") == "123456")
        #expect(add("", "123456") == "123456")
        #expect(add("99999999", "00000000") == "99999999")
        #expect(add("123456789", "000000") == "456789")       // only the last six PIN digits count
        #expect(sub("1234", "568025") == "567891")
        #expect(sub("9", "0") == "1")
        #expect(add("12a4", "123456").isEmpty)
        #expect(add("1234", "12 456").isEmpty)
        #expect(sub("1234", "") == "")
        for pin in ["0", "5", "1234", "97531", "12345678"] {
            for code in ["000000", "999999", "13579246", "5"] {
                #expect(sub(pin, add(pin, code)) == code)
            }
        }
    }

    @Test func fobStylePasscodeIsPINThenTokencode() throws {
        let seed = SecretBytes(copying: [UInt8](repeating: 7, count: 16))
        let token = SecurIDToken(serial: "000123456789", seed: seed,
                                 parameters: SecurIDParameters(digits: 6, interval: 60, addsPIN: false))
        let code = token.tokencode(at: 1_700_000_000)
        #expect(code.count == 6)
        #expect(token.passcode(at: 1_700_000_000, pin: Array("1234".utf8)) == Array("1234".utf8) + code)
        #expect(token.passcode(at: 1_700_000_000, pin: []) == code)
        #expect(token.passcode(at: 1_700_000_000, pin: Array("12x4".utf8)).isEmpty)
    }

    // MARK: Robustness (module code must never trap)

    @Test func malformedTokensGiveNoCodeInsteadOfTrapping() {
        let good = [UInt8](repeating: 1, count: 16)
        let badParameters = [
            SecurIDParameters(digits: 0, interval: 30, addsPIN: false),
            SecurIDParameters(digits: 9, interval: 30, addsPIN: false),
            SecurIDParameters(digits: -1, interval: 60, addsPIN: true),
            SecurIDParameters(digits: Int.max, interval: 60, addsPIN: true),
            SecurIDParameters(digits: 6, interval: 0, addsPIN: false),
            SecurIDParameters(digits: 6, interval: 45, addsPIN: false),
            SecurIDParameters(digits: 6, interval: -30, addsPIN: false),
            SecurIDParameters(digits: 6, interval: Int.min, addsPIN: false),
        ]
        for parameters in badParameters {
            let token = SecurIDToken(serial: "123456789012", seed: SecretBytes(copying: good), parameters: parameters)
            #expect(!token.isWellFormed)
            #expect(token.tokencode(at: 1_700_000_000).isEmpty)
            #expect(token.nextTokencode(at: 1_700_000_000).isEmpty)
            _ = token.secondsRemaining(at: Int64.min)
        }
        let parameters = SecurIDParameters(digits: 6, interval: 30, addsPIN: true)
        for serial in ["", "abc", "1234567890123", "12345678901a", "１２３４５６７８９０１２", "-12345678901"] {
            let token = SecurIDToken(serial: serial, seed: SecretBytes(copying: good), parameters: parameters)
            #expect(!token.isWellFormed, "serial \(serial)")
            #expect(token.tokencode(at: 0).isEmpty)
        }
        for length in [0, 1, 15, 17, 32] {
            let token = SecurIDToken(serial: "123456789012", seed: SecretBytes(copying: [UInt8](repeating: 1, count: length)),
                                     parameters: parameters)
            #expect(token.tokencode(at: 0).isEmpty, "seed of \(length) bytes")
        }
        let token = SecurIDToken(serial: "123456789012", seed: SecretBytes(copying: good), parameters: parameters)
        for time in [Int64.min, Int64.min + 1, -86_401, -1, 0, 1, 253_402_300_799, 253_402_300_800, Int64.max - 30, Int64.max] {
            #expect(token.tokencode(at: time).count == 6, "time \(time)")
            let remaining = token.secondsRemaining(at: time)
            #expect((1...30).contains(remaining))
        }
        #expect(token.nextTokencode(at: Int64.max).isEmpty)
        // A short all-digit serial counts as left-padded with zeros.
        let short = SecurIDToken(serial: "123456789", seed: SecretBytes(copying: good), parameters: parameters)
        let padded = SecurIDToken(serial: "000123456789", seed: SecretBytes(copying: good), parameters: parameters)
        #expect(short.tokencode(at: 1_700_000_000) == padded.tokencode(at: 1_700_000_000))
    }

    /// The calendar breakdown against glibc's gmtime_r (proleptic Gregorian, UTC).
    @Test func utcBreakdownMatchesGmtime() {
        var times: [Int64] = [0, -1, 59, 60, 86_399, 86_400, 951_782_400, 951_868_799, 4_107_542_400,
                              -62_135_596_800, 253_402_300_799, 946_684_800, 2_147_483_647, -2_208_988_800]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            times.append(Int64(bitPattern: state >> 1) % 400_000_000_000 - 200_000_000_000)
        }
        for time in times {
            var t = time_t(time)
            var fields = tm()
            guard gmtime_r(&t, &fields) != nil else { continue }
            let ours = UTCTime(time)
            let year = (Int(fields.tm_year) + 1900) % 10_000
            #expect(ours.year == (year < 0 ? year + 10_000 : year), "year at \(time)")
            #expect(ours.month == Int(fields.tm_mon) + 1 && ours.day == Int(fields.tm_mday), "date at \(time)")
            #expect(ours.hour == Int(fields.tm_hour) && ours.minute == Int(fields.tm_min)
                    && ours.second == Int(fields.tm_sec), "time at \(time)")
        }
    }

    // MARK: Parameters, flags, expiry

    @Test func flagsWordOfTheIPhoneExample() throws {
        let steps = try #require(SecurIDVectorFile.intermediates["ctf_v2_A_iphone_pass"] as? [String: Any])
        let text = try #require(steps["flags"] as? String)
        let flags = try #require(UInt16(text.dropFirst(2), radix: 16))
        let parameters = SecurIDParameters(flagsWord: flags, expirationDay: 13_148)
        let tokenA = try #require(SecurIDVectorFile.tokens["A"] as? [String: Any])
        #expect(parameters.digits == tokenA["digits"] as? Int)
        #expect(parameters.interval == tokenA["interval"] as? Int)
        #expect(parameters.addsPIN && !parameters.localPIN && parameters.is128Bit)
        #expect(flags & SecurIDParameters.flagPassword != 0 && flags & SecurIDParameters.flagDeviceID == 0)
        let rebuilt = SecurIDParameters.flagsWord(digits: 6, interval: 30, addsPIN: true, localPIN: false)
        #expect(rebuilt | SecurIDParameters.flagPassword == flags)
        let eight = SecurIDParameters(flagsWord: SecurIDParameters.flagsWord(digits: 8, interval: 60, addsPIN: true, localPIN: true),
                                      expirationDay: 1)
        #expect(eight.digits == 8 && eight.interval == 60 && eight.addsPIN && eight.localPIN)
    }

    @Test(arguments: ["A", "B"])
    func expiryMatchesStokenShow(letter: String) throws {
        // stoken show prints the day after the Death day: the first day the token is expired.
        let entry = try #require(SecurIDVectorFile.tokens[letter] as? [String: Any])
        let shown = try #require(entry["stoken_show_expiration"] as? String).split(separator: "/").compactMap { Int($0) }
        try #require(shown.count == 3)
        var fields = tm()
        fields.tm_year = Int32(shown[0] - 1900)
        fields.tm_mon = Int32(shown[1] - 1)
        fields.tm_mday = Int32(shown[2])
        let firstExpired = Int64(timegm(&fields))
        let death = try #require(SecurIDParameters.day(year: shown[0], month: shown[1], day: shown[2])) - 1
        let parameters = SecurIDParameters(digits: 6, interval: 30, addsPIN: true, expirationDay: death)
        #expect(parameters.expiresAt == firstExpired)
        #expect(!parameters.isExpired(at: firstExpired - 1))
        #expect(parameters.isExpired(at: firstExpired))
        #expect(parameters.daysUntilExpiry(at: firstExpired - 1) == 0)
        #expect(parameters.daysUntilExpiry(at: firstExpired) == 0)
        #expect(parameters.daysUntilExpiry(at: firstExpired + 1) == -1)
        #expect(parameters.daysUntilExpiry(at: firstExpired - 86_400 * 14 - 1) == 14)
    }

    @Test func calendarDays() {
        #expect(SecurIDParameters.day(year: 2000, month: 1, day: 1) == 0)
        #expect(SecurIDParameters.day(year: 2000, month: 3, day: 1) == 60)
        #expect(SecurIDParameters.day(year: 1999, month: 12, day: 31) == -1)
        #expect(SecurIDParameters.day(year: 2044, month: 11, day: 9) == 16_384)
        #expect(SecurIDParameters.day(year: 2023, month: 2, day: 29) == nil)
        #expect(SecurIDParameters.day(year: 2024, month: 2, day: 29) != nil)
        #expect(SecurIDParameters.day(year: 1900, month: 2, day: 29) == nil)
        #expect(SecurIDParameters.day(year: 2023, month: 13, day: 1) == nil)
        #expect(SecurIDParameters.day(year: 0, month: 1, day: 1) == nil)
        #expect(SecurIDParameters.day(year: 10_000, month: 1, day: 1) == nil)
        #expect(SecurIDParameters(digits: 6, interval: 30, addsPIN: false).expiresAt == nil)
        #expect(SecurIDParameters(digits: 6, interval: 30, addsPIN: false, expirationDay: Int.max).expiresAt == Int64.max)
        #expect(SecurIDParameters(digits: 6, interval: 30, addsPIN: false, expirationDay: Int.max).daysUntilExpiry(at: Int64.min) != nil)
        #expect(!SecurIDParameters(digits: 6, interval: 30, addsPIN: false).isExpired(at: Int64.max))
    }
}
