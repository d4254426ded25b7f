import Foundation
import Testing
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

@Suite struct SecurIDCTFTests {
    typealias F = SecurIDFixtures

    static let exportNames: [String] = F.exports.keys.sorted()
    static let ctfVectorIDs: [String] = F.vectors
        .filter { ($0["kind"] as? String)?.hasPrefix("ctf") == true }.compactMap { $0["id"] as? String }

    @Test func vectorsArePresent() {
        #expect(Self.exportNames.count >= 9, "Tests/Vectors/securid.json missing or unreadable at \(F.vectorURL.path)")
        #expect(Self.ctfVectorIDs.count >= 20)
    }

    /// The vector that uses an export string names the password and device ID it needs.
    static func credentials(forExport string: String) -> (password: String?, device: String?)? {
        guard let vector = F.vectors.first(where: { $0["token"] as? String == string }) else { return nil }
        return (vector["password"] as? String, vector["devid"] as? String)
    }

    // MARK: Every export of tokens A and B

    @Test(arguments: SecurIDCTFTests.exportNames)
    func exportDecodes(name: String) throws {
        let string = try #require(F.exportString(name))
        let credentials = try #require(Self.credentials(forExport: string), "no vector uses export \(name)")
        let imported = try SecurIDCTF.decode(string, options: F.options(password: credentials.password,
                                                                          device: credentials.device))
        // v3 strings carry only AddPIN (PIN mode 2 or 0), not LocalPIN.
        try F.expectMatches(imported, letter: String(name.prefix(1)), keepsLocalPIN: !name.contains("v3"), source: "ctf")
        #expect(imported.account == nil && imported.issuer == nil)
    }

    // MARK: Every CTF tokencode vector (v2, v2 URLs, v3, v4)

    @Test(arguments: SecurIDCTFTests.ctfVectorIDs)
    func ctfTokencodeVector(id: String) throws {
        let vector = try #require(F.vector(id: id))
        let string = try #require(vector["token"] as? String)
        let time = Int64(try #require(vector["time"] as? Int))
        let imported = try SecurIDCTF.decode(string, options: F.options(password: vector["password"] as? String,
                                                                          device: vector["devid"] as? String, now: time))
        let token = try #require(F.securID(imported))
        let pin = Array(try #require(vector["pin"] as? String).utf8)
        #expect(token.passcode(at: time, pin: pin) == Array(try #require(vector["tokencode"] as? String).utf8))
        #expect(imported.serial?.utf8.count == 12)
    }

    // MARK: Step by step (intermediates.ctf_v2_A_iphone_pass)

    @Test func v2FieldsStepByStep() throws {
        let steps = try #require(F.intermediates["ctf_v2_A_iphone_pass"] as? [String: Any])
        let digits = Array(try #require(steps["digits"] as? String).utf8)
        #expect(String(decoding: digits[0...0], as: UTF8.self) == steps["version_digit"] as? String)
        #expect(String(decoding: digits[1...12], as: UTF8.self) == steps["serial"] as? String)

        let payload = SecurIDCTF.bits(of: Array(digits[13...75]))
        #expect(payload.count == 189)
        var packed = [UInt8]()
        for offset in stride(from: 0, to: 192, by: 8) { packed.append(UInt8(SecurIDCTF.read(payload, offset, 8))) }
        #expect(Hex.encode(packed) == steps["payload_189_bits_hex"] as? String)
        #expect(Hex.encode(packed.prefix(16)) == steps["enc_seed"] as? String)
        #expect("0x" + String(SecurIDCTF.read(payload, 128, 16), radix: 16) == steps["flags"] as? String)
        #expect(Int(SecurIDCTF.read(payload, 144, 14)) == steps["exp_days_since_2000"] as? Int)
        #expect(Int(SecurIDCTF.read(payload, 158, 1)) == steps["unused_bit"] as? Int)
        #expect(Int(SecurIDCTF.read(payload, 159, 15)) == steps["seed_hash15"] as? Int)
        #expect(Int(SecurIDCTF.read(payload, 174, 15)) == steps["devid_hash15"] as? Int)
        #expect(Int(SecurIDCrypto.short15([UInt8](repeating: 0, count: 40))) == steps["devid_hash15_of_40_zero_bytes"] as? Int)

        let checksum = SecurIDCTF.bits(of: Array(digits[76...]))
        #expect(Int(SecurIDCTF.read(checksum, 0, 15)) == steps["checksum15_from_digits"] as? Int)
        #expect(Int(SecurIDCrypto.short15(Array(digits[0..<76]))) == steps["checksum15_computed_over_first_76_chars"] as? Int)

        let keyInput = try #require((steps["sid_hash_input_for_key"] as? String).flatMap(Hex.decode))
        #expect(keyInput == Array("asdf1234".utf8) + SecurIDCTF.seedKeyMagic)
        let seedKey = SecurIDCrypto.sidHash(keyInput)
        #expect(Hex.encode(seedKey) == steps["seed_key"] as? String)
        #expect(Hex.encode(SecurIDCrypto.decryptBlock(key: seedKey, Array(packed.prefix(16)))) == steps["decrypted_seed"] as? String)
    }

    @Test func deviceIDFilters() {
        let guid = Array("a01c4380-fc01-4df0-b113-7fb98ec74694".utf8)
        // v2 in a URL: 40-character window, hex digits kept, uppercased.
        #expect(String(decoding: SecurIDCTF.filteredDeviceID(guid, version: 2, fieldLength: 40), as: UTF8.self)
                == "A01C4380FC014DF0B1137FB98EC74694")
        // v2 bare string: only the first 32 characters count, dashes included.
        #expect(String(decoding: SecurIDCTF.filteredDeviceID(guid, version: 2, fieldLength: 32), as: UTF8.self)
                == "A01C4380FC014DF0B1137FB98EC7")
        // v1: decimal digits dropped, the rest kept.
        #expect(String(decoding: SecurIDCTF.filteredDeviceID(Array("ab-12:cd".utf8), version: 1, fieldLength: 32), as: UTF8.self)
                == "AB-:CD")
    }

    // MARK: Wrappers

    @Test func urlVariantsOfTheSameToken() throws {
        let string = try #require(F.exportString("A-v2-iphone-pass"))
        let value = try #require(string.components(separatedBy: "ctfData=").last)
        let options = F.options(password: "asdf1234")
        for form in ["com.rsa.securid.iphone://ctf?ctfData=\(value)",
                     "COM.RSA.SECURID.IPHONE://ctf?CTFDATA=\(value)",
                     "com.rsa.securid://ctf?ctfData=\(value)",
                     "http://127.0.0.1/securid/ctf?ctfData=\(value)",
                     "http://127.0.0.1/securid/ctf?ctfData=3D\(value)",
                     "http://127.0.0.1/securid/ctf?ctfData=\(value)&version=2",
                     "  \n\(string)\n  ",
                     String(value)] {
            let imported = try SecurIDCTF.decode(form, options: options)
            try F.expectMatches(imported, letter: "A", source: "ctf")
        }
        #expect(F.ctfError("https://example.com/securid/ctf?ctfData=\(value)", options)?.code == .unrecognized)
        #expect(F.ctfError("com.rsa.securid.iphone://ctf?data=1&xctfData=\(value)", options)?.code == .malformed)
        #expect(F.ctfError("http://127.0.0.1/securid/ctf?schema=https&url=rsa.example.com:443/ctkip/services/CtkipService", options)?.code
                == .unsupported)
        #expect(F.ctfError("com.rsa.securid://ctf?ctfData=", options)?.code == .malformed)
        #expect(F.ctfError("<?xml version=\"1.0\"?><TKNBatch/>", options)?.code == .unrecognized)
    }

    // MARK: Negative cases

    @Test func wrongOrMissingPassword() throws {
        let v2 = try #require(F.exportString("A-v2-iphone-pass"))
        #expect(F.ctfError(v2, F.options(password: "asdf1235"))?.code == .password)
        #expect(F.ctfError(v2, F.options())?.code == .password)
        #expect(F.ctfError(v2, F.options(password: ""))?.code == .password)
        #expect(F.ctfError(v2, F.options(password: String(repeating: "x", count: 41)))?.code == .password)
        let bPass = try #require(F.exportString("B-v2-pass"))
        #expect(F.ctfError(bPass, F.options(password: "tr0ub4dor&3"))?.code == .password)

        let v3 = try #require(F.exportString("A-v3-pass-devid"))
        let device = "a01c4380-fc01-4df0-b113-7fb98ec74694"
        #expect(F.ctfError(v3, F.options(password: "Correct horsE", device: device))?.code == .password)
        #expect(F.ctfError(v3, F.options(device: device))?.code == .password)

        let v4 = try #require(F.vector(id: "model-v4-A-1700000000")?["token"] as? String)
        #expect(F.ctfError(v4, F.options(password: "Correct", device: device))?.code == .password)
    }

    @Test func wrongOrMissingDeviceID() throws {
        let other = "556f1985-33dd-442c-9155-3a0e994f21b1"
        let binding = "3f9a0c2b7e41d58a6c0b19e2"
        for (name, password) in [("A-v2-android-devid", nil), ("A-v2-numeric-guid-devid", nil), ("B-v2-numdevid", nil),
                                 ("A-v3-pass-devid", "Correct horse"), ("B-v3-devid", nil)] as [(String, String?)] {
            let string = try #require(F.exportString(name))
            for device in [other, binding, ""] {
                let error = F.ctfError(string, F.options(password: password, device: device))
                #expect(error?.code == .deviceBinding, "\(name) with device \(device)")
                #expect(error?.message.contains("bound to another device ID") == true, "\(error?.message ?? "")")
            }
            #expect(F.ctfError(string, F.options(password: password))?.code == .deviceBinding, "\(name) without a device ID")
        }
        // The upstream v4 vector is bound too.
        let v4 = try #require(F.vector(id: "upstream-v4")?["token"] as? String)
        #expect(F.ctfError(v4, F.options(device: binding, now: 1_650_391_605))?.code == .deviceBinding)
    }

    /// A device-bound v2 string moved between the URL (40-byte field) and bare (32-byte field)
    /// forms no longer matches the same GUID.
    @Test func deviceFieldDependsOnWrapper() throws {
        let device = "a01c4380-fc01-4df0-b113-7fb98ec74694"
        let url = try #require(F.exportString("A-v2-android-devid"))
        let stripped = try #require(url.components(separatedBy: "ctfData=").last)
        #expect(F.ctfError(stripped, F.options(device: device))?.code == .deviceBinding)
        let bare = try #require(F.exportString("A-v2-numeric-guid-devid"))
        #expect(F.ctfError("com.rsa.securid.iphone://ctf?ctfData=" + bare, F.options(device: device))?.code == .deviceBinding)
        // A token that is not bound ignores the binding ID.
        let unbound = try #require(F.exportString("A-v2"))
        #expect(F.ctfError(unbound, F.options(device: device)) == nil)
    }

    @Test func everyAlteredDigitFailsTheChecksum() throws {
        let string = Array(try #require(F.exportString("A-v2")).utf8)
        for position in 1..<string.count {
            var altered = string
            let digit = altered[position] - UInt8(ascii: "0")
            altered[position] = UInt8(ascii: "0") + (digit < 8 ? (digit + 1) % 8 : (digit == 8 ? 9 : 8))
            let error = F.ctfError(String(decoding: altered, as: UTF8.self), F.options())
            #expect(error?.code == .checksum, "digit \(position + 1): \(error?.message ?? "accepted")")
        }
        let blocks = try #require(F.exportString("A-v2-blocks"))
        #expect(F.ctfError(blocks.replacingOccurrences(of: "-09807-", with: "-09806-"), F.options())?.code == .checksum)
        #expect(F.ctfError(blocks.replacingOccurrences(of: "-", with: " "), F.options()) == nil)
    }

    @Test func malformedNumericStrings() throws {
        let string = try #require(F.exportString("A-v2"))
        let options = F.options()
        let truncated = F.ctfError(String(string.dropLast()), options)
        #expect(truncated?.code == .malformed)
        #expect(truncated?.message.contains("80 digits") == true, "\(truncated?.message ?? "")")
        #expect(F.ctfError(String(string.prefix(40)), options)?.code == .malformed)
        #expect(F.ctfError(string + "000000", options)?.code == .malformed)       // 87 digits
        var letters = Array(string.utf8)
        letters[30] = UInt8(ascii: "x")
        let badCharacter = F.ctfError(String(decoding: letters, as: UTF8.self), options)
        #expect(badCharacter?.code == .malformed)
        #expect(badCharacter?.message.contains("position 31") == true, "\(badCharacter?.message ?? "")")
        #expect(F.ctfError("3" + string.dropFirst(), options)?.code == .unsupported)
        #expect(F.ctfError("", options)?.code == .malformed)
        #expect(F.ctfError("   \n", options)?.code == .malformed)
        #expect(F.ctfError(String(repeating: "2", count: 10_000), options)?.code == .tooLarge)
    }

    @Test func alteredBase64Strings() throws {
        let url = try #require(F.exportString("B-v3-devid"))
        let device = "ABCD-1234-efgh-5678"
        let value = try #require(url.components(separatedBy: "ctfData=").last?.removingPercentEncoding)
        let raw = try #require(Data(base64Encoded: value))
        #expect(raw.count == 291)

        func decode(_ bytes: Data, device: String? = device) -> ImportError? {
            let encoded = bytes.base64EncodedString()
                .replacingOccurrences(of: "+", with: "%2B").replacingOccurrences(of: "/", with: "%2F")
                .replacingOccurrences(of: "=", with: "%3D")
            return F.ctfError("http://127.0.0.1/securid/ctf?ctfData=" + encoded, F.options(device: device))
        }
        #expect(decode(raw) == nil)
        // Device-ID scrubbing: only letters and digits count, case-insensitively.
        #expect(decode(raw, device: "abcd1234EFGH5678") == nil)

        func flipped(_ offset: Int) -> Data {
            var copy = raw
            copy[offset] ^= 0x01
            return copy
        }
        #expect(decode(flipped(10))?.code == .deviceBinding)        // device-ID hash
        #expect(decode(flipped(40))?.code == .checksum)             // password hash of an unlocked token
        #expect(decode(flipped(70))?.code == .deviceBinding)        // nonce: the device-ID hash, checked first, fails
        #expect(decode(flipped(100))?.code == .checksum)            // encrypted payload → HMAC
        #expect(decode(flipped(258))?.code == .checksum)
        #expect(decode(flipped(270))?.code == .checksum)            // the HMAC itself
        #expect(decode(flipped(1))?.code == .password)              // now claims a password
        var version = raw
        version[0] = 5
        #expect(decode(version)?.code == .unsupported)
        #expect(decode(raw.prefix(290))?.code == .malformed)
        #expect(decode(raw + Data([0, 0, 0]))?.code == .malformed)
        #expect(F.ctfError("AwAB%ZZ", F.options())?.code == .malformed)
        #expect(F.ctfError("AwAB*not*base64", F.options())?.code == .malformed)
    }

    @Test func expiry() throws {
        let string = try #require(F.exportString("A-v2"))
        let entry = try #require(F.token("A"))
        let firstExpired = try #require((entry["stoken_show_expiration"] as? String).flatMap(F.unixTime(ofDate:)))
        #expect(F.ctfError(string, F.options(now: firstExpired - 1)) == nil)
        let error = F.ctfError(string, F.options(now: firstExpired))
        #expect(error?.code == .expired)
        #expect(error?.message.contains("2035-12-31") == true, "\(error?.message ?? "")")

        let v3 = try #require(F.exportString("B-v3-devid"))
        let b = try #require(F.token("B"))
        let bExpired = try #require((b["stoken_show_expiration"] as? String).flatMap(F.unixTime(ofDate:)))
        #expect(F.ctfError(v3, F.options(device: "ABCD-1234-efgh-5678", now: bExpired - 1)) == nil)
        #expect(F.ctfError(v3, F.options(device: "ABCD-1234-efgh-5678", now: bExpired))?.code == .expired)
    }
}
