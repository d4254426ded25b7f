import COpenSSL
import COpenSSLImport
import SecurOTPCore
import SecurOTPSecurID

/// RSA SecurID "compressed token format" strings (research: securid-formats.md §§3–5):
/// numeric v1/v2 strings (81–85 digits, optionally grouped with dashes), base64 v3/v4
/// strings, and the smartphone URLs that carry either in `ctfData=`.
///
/// The token password comes from `options.password`; the device ID a bound token must match
/// is `options.bindingID` (securotp's per-user binding ID).
public enum SecurIDCTF {
    /// Longest input considered (a v3 URL is about 1 100 characters).
    static let maximumLength = 8192

    public static func decode(_ text: String, options: ImportOptions) throws(ImportError) -> ImportedToken {
        let input = SecurIDText.trimmed(Array(text.utf8))
        guard input.count <= maximumLength else {
            throw ImportError(.tooLarge, "a SecurID CTF string is at most \(maximumLength) characters; this input has \(input.count)")
        }
        guard !input.isEmpty else { throw ImportError(.malformed, "the SecurID CTF string is empty") }
        if SecurIDText.find(Array("<?xml".utf8), in: input) != nil || input.first == UInt8(ascii: "<") {
            throw ImportError(.unrecognized, "this is XML (an .sdtid file?), not a SecurID CTF string")
        }

        let (payload, smartphone) = try payloadOfURL(input)
        guard let first = payload.first else {
            throw ImportError(.malformed, "the ctfData parameter of the SecurID URL is empty")
        }
        if first == UInt8(ascii: "1") || first == UInt8(ascii: "2") {
            return try decodeNumeric(payload, smartphone: smartphone, options: options)
        }
        if SecurIDText.isDigit(first) {
            throw ImportError(.unsupported,
                              "numeric CTF strings start with version 1 or 2; this one starts with \(SecurIDText.printable([first]))")
        }
        return try decodeBase64(payload, options: options)
    }

    // MARK: - URL wrappers (§5)

    /// The three smartphone URL forms; they use the 40-byte v2 device-ID field.
    static let urlPrefixes = [
        "com.rsa.securid.iphone://ctf?",
        "com.rsa.securid://ctf?",
        "http://127.0.0.1/securid/ctf?",
    ]

    /// The token string inside a URL (and whether it came from one), or the input itself.
    static func payloadOfURL(_ input: [UInt8]) throws(ImportError) -> ([UInt8], Bool) {
        // Some mailers turn "=" into the quoted-printable "=3D"; try that spelling first.
        var start: Int?
        for key in ["ctfData=3D", "ctfData="] {
            if let found = SecurIDText.find(Array(key.utf8), in: input) {
                start = found + key.utf8.count
                // Only the parameter name counts: "ctfData=" must follow "?" or "&".
                let before = found > 0 ? input[found - 1] : 0
                guard before == UInt8(ascii: "?") || before == UInt8(ascii: "&") else {
                    throw ImportError(.malformed, "\"ctfData=\" is not a query parameter in this URL")
                }
                let prefix = Array(input[0..<found])
                guard urlPrefixes.contains(where: { SecurIDText.hasPrefix(prefix, $0) }) else {
                    throw ImportError(.unrecognized,
                                      "not a SecurID token URL: expected com.rsa.securid.iphone://ctf?ctfData=…, com.rsa.securid://ctf?ctfData=… or http://127.0.0.1/securid/ctf?ctfData=…")
                }
                break
            }
        }
        guard let start else {
            if SecurIDText.find(Array("://".utf8), in: input) != nil {
                if SecurIDText.find(Array("ctkip".utf8), in: input) != nil
                    || SecurIDText.find(Array("url=".utf8), in: input) != nil {
                    throw ImportError(.unsupported,
                                      "this RSA activation URL carries no seed (it starts CT-KIP provisioning, which securotp does not support); ask for a CTF string or an .sdtid file")
                }
                throw ImportError(.unrecognized, "this URL has no ctfData parameter: not a SecurID token URL")
            }
            return (input, false)
        }
        var end = start
        while end < input.count, input[end] != UInt8(ascii: "&"), input[end] != UInt8(ascii: "#") { end += 1 }
        return (Array(input[start..<end]), true)
    }

    // MARK: - Numeric v1/v2 (§3)

    static let seedKeyMagic: [UInt8] = [0xD8, 0xF5, 0x32, 0x53, 0x82, 0x89]

    static func decodeNumeric(_ text: [UInt8], smartphone: Bool,
                              options: ImportOptions) throws(ImportError) -> ImportedToken {
        var digits = [UInt8]()
        digits.reserveCapacity(text.count)
        for (position, byte) in text.enumerated() {
            if SecurIDText.isDigit(byte) {
                digits.append(byte)
            } else if byte != UInt8(ascii: "-") && byte != UInt8(ascii: " ") {
                // Dashes (stoken's --blocks) and spaces only group the digits.
                throw ImportError(.malformed,
                                  "numeric SecurID CTF string: unexpected character \"\(SecurIDText.printable([byte]))\" at position \(position + 1) (only digits, dashes and spaces are allowed)")
            }
        }
        guard (81...85).contains(digits.count) else {
            throw ImportError(.malformed,
                              "numeric SecurID CTF string has \(digits.count) digits; a complete one has 81 (at most 85)")
        }

        // The checksum covers every character but the last five.
        let body = Array(digits[0..<(digits.count - 5)])
        let stored = bits(of: Array(digits[(digits.count - 5)...]))
        guard SecurIDCrypto.short15(body) == UInt16(truncatingIfNeeded: read(stored, 0, 15)) else {
            throw ImportError(.checksum, "the SecurID CTF string's checksum does not match: it was mistyped, cut or altered")
        }

        let version = digits[0] - UInt8(ascii: "0")
        let serial = String(decoding: digits[1...12], as: UTF8.self)
        let payload = bits(of: Array(digits[13...75]))
        let flags = UInt16(truncatingIfNeeded: read(payload, 128, 16))
        let expirationDay = Int(read(payload, 144, 14))
        let seedCheck = UInt16(truncatingIfNeeded: read(payload, 159, 15))
        let deviceCheck = UInt16(truncatingIfNeeded: read(payload, 174, 15))
        var encryptedSeed = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 { encryptedSeed[index] = UInt8(truncatingIfNeeded: read(payload, 8 * index, 8)) }

        let parameters = SecurIDParameters(flagsWord: flags, expirationDay: expirationDay)
        guard flags & SecurIDParameters.flag128Bit != 0 else {
            throw ImportError(.unsupported, "SecurID token \(serial) is a 64-bit (legacy) token; only 128-bit AES tokens are supported")
        }

        // Device binding: a 15-bit check of the filtered device ID, zero-padded to the field.
        let fieldLength = smartphone ? 40 : 32
        var deviceID = [UInt8]()
        defer { SecurIDCrypto.wipe(&deviceID) }
        let bound = flags & SecurIDParameters.flagDeviceID != 0
        if bound {
            guard let binding = options.bindingID else {
                throw ImportError(.deviceBinding, "SecurID token \(serial) is bound to a device ID, and no binding ID was given")
            }
            deviceID = filteredDeviceID(Array(binding.utf8), version: version, fieldLength: fieldLength)
            let padded = deviceID + [UInt8](repeating: 0, count: fieldLength - deviceID.count)
            guard SecurIDCrypto.short15(padded) == deviceCheck else {
                throw ImportError(.deviceBinding,
                                  "SecurID token \(serial) is bound to another device ID (not this binding ID \(binding))")
            }
        }

        var password = [UInt8]()
        defer { SecurIDCrypto.wipe(&password) }
        let locked = flags & SecurIDParameters.flagPassword != 0
        if locked {
            guard let given = options.password, !given.isEmpty else {
                throw ImportError(.password, "SecurID token \(serial) is protected by a password; none was given")
            }
            guard given.count <= 40 else {
                throw ImportError(.password, "SecurID token passwords have at most 40 characters; this one has \(given.count)")
            }
            password = given
        }

        var keyInput = SecurIDText.joined([password, deviceID, seedKeyMagic])
        var seedKey = SecurIDCrypto.sidHash(keyInput)
        SecurIDCrypto.wipe(&keyInput)
        var seed = SecurIDCrypto.decryptBlock(key: seedKey, encryptedSeed)
        SecurIDCrypto.wipe(&seedKey)
        guard seed.count == 16, SecurIDCrypto.short15(seed) == seedCheck else {
            SecurIDCrypto.wipe(&seed)
            if locked { throw ImportError(.password, "wrong password for SecurID token \(serial)") }
            if bound { throw ImportError(.deviceBinding, "SecurID token \(serial) is bound to another device ID (the seed check failed)") }
            throw ImportError(.checksum, "SecurID token \(serial): the decrypted seed fails its check value; the string is corrupt")
        }
        return try SecurIDImport.token(serial: serial, seed: &seed, parameters: parameters, source: "ctf", options: options)
    }

    /// The device ID as v1/v2 strings hash it: only the first `fieldLength` characters count
    /// (separators included); v2 keeps their hex digits, v1 everything but decimal digits,
    /// uppercased in both cases.
    static func filteredDeviceID(_ text: [UInt8], version: UInt8, fieldLength: Int) -> [UInt8] {
        var out = [UInt8]()
        for byte in text.prefix(fieldLength) {
            if version >= 2 {
                if SecurIDText.isHexDigit(byte) { out.append(SecurIDText.upper(byte)) }
            } else if !SecurIDText.isDigit(byte) {
                out.append(SecurIDText.upper(byte))
            }
        }
        return out
    }

    /// Three bits per digit (digit & 7), most significant first; one element per bit.
    static func bits(of digits: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(digits.count * 3)
        for digit in digits {
            let value = (digit &- UInt8(ascii: "0")) & 7
            out.append(value >> 2 & 1)
            out.append(value >> 1 & 1)
            out.append(value & 1)
        }
        return out
    }

    /// `count` (≤ 32) bits starting at bit `offset`, big-endian; missing bits read as 0.
    static func read(_ bits: [UInt8], _ offset: Int, _ count: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in offset..<(offset + min(count, 32)) {
            value = value << 1 | UInt32(index < bits.count ? bits[index] : 0)
        }
        return value
    }

    // MARK: - Base64 v3/v4 (§4)

    static let v3Length = 291
    static let macConstant: [UInt8] = [0xD0, 0x14, 0x43, 0x3C, 0x6D, 0x17, 0x9F, 0xEB,
                                       0xDA, 0x09, 0xAB, 0xFC, 0x32, 0x49, 0x63, 0x4C]
    static let encryptionConstant: [UInt8] = [0x3B, 0xAF, 0xFF, 0x4D, 0x91, 0x8D, 0x89, 0xB6,
                                              0x81, 0x60, 0xDE, 0x44, 0x4E, 0x05, 0xC0, 0xDD]
    static let ticksPerDay: UInt64 = 337_500

    static func decodeBase64(_ text: [UInt8], options: ImportOptions) throws(ImportError) -> ImportedToken {
        guard let unescaped = SecurIDText.percentDecoded(text) else {
            throw ImportError(.malformed, "the SecurID CTF string has a broken %-escape")
        }
        guard let raw = SecurIDText.base64Decoded(unescaped) else {
            throw ImportError(.malformed, "the SecurID CTF string is neither numeric nor valid base64")
        }
        guard let version = raw.first, version == 3 || version == 4 else {
            let shown = raw.first.map { String($0) } ?? "none"
            throw ImportError(.unsupported, "SecurID CTF version \(shown) is not supported (numeric 1–2, base64 3–4 are)")
        }
        guard raw.count == v3Length else {
            throw ImportError(.malformed, "a version \(version) SecurID CTF string holds \(v3Length) bytes; this one holds \(raw.count)")
        }

        let passwordLocked = raw[1] != 0
        let deviceLocked = raw[2] != 0
        let nonce = Array(raw[67..<83])

        var device = [UInt8](repeating: 0, count: 48)
        defer { SecurIDCrypto.wipe(&device) }
        if deviceLocked {
            guard let binding = options.bindingID else {
                throw ImportError(.deviceBinding, "this SecurID token is bound to a device ID, and no binding ID was given")
            }
            var kept = 0
            for byte in binding.utf8 where SecurIDText.isAlphanumeric(byte) && kept < 48 {
                device[kept] = SecurIDText.upper(byte)
                kept += 1
            }
        }
        var password = [UInt8]()
        defer { SecurIDCrypto.wipe(&password) }
        if passwordLocked {
            guard let given = options.password, !given.isEmpty else {
                throw ImportError(.password, "this SecurID token is protected by a password; none was given")
            }
            password = given
        }

        guard ConstantTime.equal(sha256(nonce + device), Array(raw[3..<35])) else {
            if deviceLocked {
                throw ImportError(.deviceBinding, "this SecurID token is bound to another device ID (not this binding ID \(options.bindingID ?? ""))")
            }
            throw ImportError(.checksum, "the SecurID CTF string's device-ID hash is wrong: the string is corrupt")
        }
        var passwordInput = SecurIDText.joined([nonce, device, password])
        defer { SecurIDCrypto.wipe(&passwordInput) }
        guard ConstantTime.equal(sha256(passwordInput), Array(raw[35..<67])) else {
            if passwordLocked { throw ImportError(.password, "wrong password for this SecurID token") }
            throw ImportError(.checksum, "the SecurID CTF string's password hash is wrong: the string is corrupt")
        }

        let macKey = try deriveKey(version: version, password: password, device: device,
                                   constant: macConstant, nonce: nonce)
        let mac = HMAC.authenticate(.sha256, key: macKey, message: Array(raw[0..<259]))
        guard ConstantTime.equal(mac, Array(raw[259..<291])) else {
            throw ImportError(.checksum, "the SecurID CTF string's HMAC does not match: the string was altered")
        }

        let encryptionKey = try deriveKey(version: version, password: password, device: device,
                                          constant: encryptionConstant, nonce: nonce)
        var plain = [UInt8](repeating: 0, count: 176)
        defer { SecurIDCrypto.wipe(&plain) }
        let ciphertext = Array(raw[83..<259])
        let length = encryptionKey.withUnsafeBytes { key in
            nonce.withUnsafeBufferPointer { iv in
                ciphertext.withUnsafeBufferPointer { input in
                    plain.withUnsafeMutableBufferPointer { out -> Int in
                        guard let k = key.baseAddress, let v = iv.baseAddress, let i = input.baseAddress,
                              let o = out.baseAddress else { return -1 }
                        return securotp_aes_cbc_decrypt(k, key.count, v, i, input.count, 0, o)
                    }
                }
            }
        }
        guard length == 176 else { throw ImportError(.malformed, "the SecurID CTF payload could not be decrypted") }

        // Payload layout (§4): serial, seed, then one byte each for mode, digits, AddPIN, interval.
        let serialField = plain[0..<16]
        let serialBytes = Array(serialField.prefix { $0 != 0 })
        guard serialBytes.count == 12, serialBytes.allSatisfy(SecurIDText.isDigit) else {
            throw ImportError(.malformed, "the SecurID CTF payload's serial \"\(SecurIDText.printable(serialBytes))\" is not 12 digits")
        }
        let serial = String(decoding: serialBytes, as: UTF8.self)
        let digits = Int(plain[35])
        guard (1...8).contains(digits) else {
            throw ImportError(.unsupported, "SecurID token \(serial) has \(digits)-digit tokencodes; 1 to 8 are possible")
        }
        let addsPIN = plain[36] != 0x1F
        let interval = plain[37] == 60 ? 60 : 30
        let mode = plain[34] != 0
        var ticks: UInt64 = 0
        for index in 48..<53 { ticks = ticks << 8 | UInt64(plain[index]) }
        var expirationDay = 0
        if ticks != 0 {
            let days = Int(ticks / ticksPerDay) - 10_957
            guard days > 0 else {
                throw ImportError(.expired, "SecurID token \(serial) expired before 2000-01-02")
            }
            expirationDay = days
        }
        var flags = SecurIDParameters.flagsWord(digits: digits, interval: interval, addsPIN: addsPIN,
                                                localPIN: false, mode: mode)
        if passwordLocked { flags |= SecurIDParameters.flagPassword }
        if deviceLocked { flags |= SecurIDParameters.flagDeviceID }
        let parameters = SecurIDParameters(digits: digits, interval: interval, addsPIN: addsPIN, localPIN: false,
                                           expirationDay: expirationDay, flags: flags)
        var seed = Array(plain[16..<32])
        return try SecurIDImport.token(serial: serial, seed: &seed, parameters: parameters, source: "ctf", options: options)
    }

    /// PBKDF2-HMAC-SHA256 (1000 rounds, salt = nonce) over password ‖ device ‖ constant ‖
    /// nonce: all of it for v4, only the bytes at odd offsets for v3.
    static func deriveKey(version: UInt8, password: [UInt8], device: [UInt8], constant: [UInt8],
                          nonce: [UInt8]) throws(ImportError) -> SecretBytes {
        var buffer = SecurIDText.joined([password, device, constant, nonce])
        defer { SecurIDCrypto.wipe(&buffer) }
        var input = [UInt8]()
        defer { SecurIDCrypto.wipe(&input) }
        if version == 3 {
            input.reserveCapacity(buffer.count / 2)
            var index = 1
            while index < buffer.count {
                input.append(buffer[index])
                index += 2
            }
        } else {
            input = buffer
        }
        let key = SecretBytes(count: 32)
        let ok = key.withUnsafeMutableBytes { out in
            input.withUnsafeBufferPointer { pass in
                nonce.withUnsafeBufferPointer { salt -> Bool in
                    guard let o = out.baseAddress, let s = salt.baseAddress else { return false }
                    // An empty password is legal for PBKDF2; give OpenSSL a valid pointer anyway.
                    let p = pass.baseAddress ?? s
                    return securotp_pbkdf2(Int32(SECUROTP_IMPORT_SHA256), p, pass.count, s, salt.count,
                                           1000, o, out.count) == 1
                }
            }
        }
        guard ok else { throw ImportError(.malformed, "key derivation failed for the SecurID CTF string") }
        return key
    }

    static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        data.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                if let o = output.baseAddress { securotp_sha256(input.baseAddress, input.count, o) }
            }
        }
        return out
    }
}
