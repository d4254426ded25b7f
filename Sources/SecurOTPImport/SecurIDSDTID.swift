import SecurOTPCore
import SecurOTPSecurID

/// RSA SecurID .sdtid XML token files (research: securid-formats.md §6): a `TKNBatch` with a
/// `TKNHeader` holding defaults, the batch secret and `HeaderMAC`, then one or more `TKN`
/// each with serial, encrypted seed, overrides and `TokenMAC`. The trailer (RSA signature and
/// certificate) is not covered by the MACs and is ignored.
///
/// Files with a password are unlocked with `options.password`; files without one derive the
/// same keys from the header's `Origin`. Both MACs are checked before any seed is used.
public enum SecurIDSDTID {
    /// Largest file accepted (real files are a few kilobytes per token).
    public static let maximumSize = 1 << 20

    public static func decode(_ bytes: [UInt8], options: ImportOptions) throws(ImportError) -> [ImportedToken] {
        guard bytes.count <= maximumSize else {
            throw ImportError(.tooLarge, "the .sdtid file has \(bytes.count) bytes; at most \(maximumSize) are accepted")
        }
        let root = try SecurIDXML.parse(bytes)
        guard root.isNamed("TKNBatch") else {
            throw ImportError(.unrecognized, "not an .sdtid file: the root element is <\(root.nameText)>, not <TKNBatch>")
        }
        let headers = root.children.filter { $0.isNamed("TKNHeader") }
        guard headers.count == 1, let header = headers.first else {
            throw ImportError(.malformed, ".sdtid file: expected one <TKNHeader>, found \(headers.count)")
        }
        let tokens = root.children.filter { $0.isNamed("TKN") }
        guard !tokens.isEmpty else { throw ImportError(.malformed, ".sdtid file: no <TKN> element") }

        // Structure and settings first (precise errors), then the MACs, then the seeds.
        var fields: [TokenFields] = []
        for token in tokens { fields.append(try TokenFields(token: token, header: header)) }
        let batch = try Batch(header: header)
        var keys = try unlock(batch: batch, tokens: tokens, tokenMACs: fields.map(\.tokenMAC), password: options.password)
        defer {
            SecurIDCrypto.wipe(&keys.batchMAC)
            for index in keys.tokens.indices { keys.tokens[index].wipe() }
        }
        var imported: [ImportedToken] = []
        for (position, token) in fields.enumerated() {
            imported.append(try token.decrypt(with: keys.tokens[position], options: options))
        }
        return imported
    }

    // MARK: - Keys (§6.2)

    static let batchIV: [UInt8] = [0x2B, 0x7E, 0x15, 0x16, 0x28, 0xAE, 0xD2, 0xA6,
                                   0xAB, 0xF7, 0x15, 0x88, 0x09, 0xCF, 0x4F, 0x3C]
    static let tokenMACIV: [UInt8] = [0x1B, 0xB6, 0x7A, 0xE8, 0x58, 0x4C, 0xAA, 0x73,
                                      0xB2, 0x57, 0x42, 0xD7, 0x07, 0x8B, 0x83, 0xB8]
    static let tokenEncryptionIV: [UInt8] = [0x16, 0xA0, 0x9E, 0x66, 0x7F, 0x3B, 0xCC, 0x90,
                                             0x8B, 0x2F, 0xB1, 0x36, 0x6E, 0xA9, 0x57, 0xD3]

    /// The header values the key derivation needs.
    struct Batch {
        var name: [UInt8]
        var origin: [UInt8]
        var dest: [UInt8]
        var secret: [UInt8]
        var headerMAC: [UInt8]
        var headerMACInput: [UInt8]

        init(header: SecurIDXMLElement) throws(ImportError) {
            name = SecurIDSDTID.text(of: "Name", in: header) ?? []
            origin = SecurIDSDTID.text(of: "Origin", in: header) ?? []
            dest = SecurIDSDTID.text(of: "Dest", in: header) ?? []
            secret = try SecurIDSDTID.base64Field("Secret", in: header, length: 16)
            headerMAC = try SecurIDSDTID.base64Field("HeaderMAC", in: header, length: 16)
            headerMACInput = SecurIDSDTID.macInput(header)
        }
    }

    struct TokenKeys {
        var mac: [UInt8]
        var encryption: [UInt8]
        mutating func wipe() {
            SecurIDCrypto.wipe(&mac)
            SecurIDCrypto.wipe(&encryption)
        }
    }

    struct Keys {
        var batchMAC: [UInt8]
        var tokens: [TokenKeys]
    }

    /// Tries the given password, then (for files without one) the header's Origin. Both MACs
    /// right → unlocked; all wrong → wrong or missing password; a mix → the file was edited.
    static func unlock(batch: Batch, tokens: [SecurIDXMLElement], tokenMACs: [[UInt8]],
                       password: [UInt8]?) throws(ImportError) -> Keys {
        var candidates: [[UInt8]] = []
        if let password, !password.isEmpty { candidates.append(password) }
        candidates.append(batch.origin)   // shares the caller's buffers: nothing new to wipe

        var edited: String?
        for candidate in candidates {
            var keys = try derive(batch: batch, tokens: tokens, passwordOrOrigin: candidate)
            var good = 0
            var bad: [String] = []
            if ConstantTime.equal(SecurIDCrypto.cbcMAC(key: keys.batchMAC, iv: batchIV, data: batch.headerMACInput),
                                  batch.headerMAC) {
                good += 1
            } else {
                bad.append("HeaderMAC")
            }
            for (position, token) in tokens.enumerated() {
                let stored = position < tokenMACs.count ? tokenMACs[position] : []
                let computed = SecurIDCrypto.cbcMAC(key: keys.tokens[position].mac, iv: tokenMACIV, data: macInput(token))
                if ConstantTime.equal(computed, stored) {
                    good += 1
                } else {
                    bad.append("TokenMAC of token \(position + 1)")
                }
            }
            if bad.isEmpty { return keys }
            if good > 0, edited == nil {
                edited = "the .sdtid file was edited: " + bad.joined(separator: ", ") + (bad.count == 1 ? " does" : " do")
                    + " not match while the other MACs do"
            }
            SecurIDCrypto.wipe(&keys.batchMAC)
            for index in keys.tokens.indices { keys.tokens[index].wipe() }
        }
        if let edited { throw ImportError(.checksum, edited) }
        if let password, !password.isEmpty {
            throw ImportError(.password, "wrong password for the .sdtid file (or its MACs are corrupt)")
        }
        throw ImportError(.password, "the .sdtid file is protected by a password (or its MACs are corrupt); give its password")
    }

    /// The batch MAC key and each token's MAC and encryption keys for one password (or
    /// Origin) candidate.
    static func derive(batch: Batch, tokens: [SecurIDXMLElement],
                       passwordOrOrigin: [UInt8]) throws(ImportError) -> Keys {
        var passwordKey = passwordKey(name: batch.name, passwordOrOrigin: passwordOrOrigin, dest: batch.dest)
        defer { SecurIDCrypto.wipe(&passwordKey) }
        var label = Array("Secret".utf8) + [0, 0] + fixed(batch.name, 8)
        var batchSecret = SecurIDCrypto.encryptBlock(key: passwordKey, label)
        SecurIDCrypto.wipe(&label)
        defer { SecurIDCrypto.wipe(&batchSecret) }
        guard batchSecret.count == 16 else { throw ImportError(.malformed, ".sdtid key derivation failed") }
        for index in 0..<16 { batchSecret[index] ^= batch.secret[index] }

        var keys = Keys(batchMAC: subkey(batchSecret, iv: batchIV, label: "BatchMAC", value: batch.name), tokens: [])
        for token in tokens {
            let serial = try serialText(of: token)
            keys.tokens.append(TokenKeys(mac: subkey(batchSecret, iv: tokenMACIV, label: "TokenMAC", value: serial),
                                         encryption: subkey(batchSecret, iv: tokenEncryptionIV,
                                                            label: "TokenEncrypt", value: serial)))
        }
        return keys
    }

    /// K0: 1000 CBC-MACs under the batch Name, over password-or-Origin ‖ Dest ‖ a counter in
    /// the last two bytes, XORed together.
    static func passwordKey(name: [UInt8], passwordOrOrigin: [UInt8], dest: [UInt8]) -> [UInt8] {
        var key = fixed(name, 16)
        // Written in place (strncpy-style fields) so the password is copied only into `data`.
        var data = [UInt8](repeating: 0, count: 80)
        for (index, byte) in passwordOrOrigin.prefix(32).enumerated() { data[index] = byte }
        for (index, byte) in dest.prefix(32).enumerated() { data[32 + index] = byte }
        var accumulator = [UInt8](repeating: 0, count: 16)
        let zeroIV = [UInt8](repeating: 0, count: 16)
        defer {
            SecurIDCrypto.wipe(&key)
            SecurIDCrypto.wipe(&data)
        }
        for counter in 0..<1000 {
            data[78] = UInt8(counter >> 8)
            data[79] = UInt8(counter & 0xFF)
            var mac = SecurIDCrypto.cbcMAC(key: key, iv: zeroIV, data: data)
            for index in 0..<min(16, mac.count) { accumulator[index] ^= mac[index] }
            SecurIDCrypto.wipe(&mac)
        }
        return accumulator
    }

    /// CBC-MAC(batch secret, iv, label[32] ‖ value[32]).
    static func subkey(_ batchSecret: [UInt8], iv: [UInt8], label: String, value: [UInt8]) -> [UInt8] {
        SecurIDCrypto.cbcMAC(key: batchSecret, iv: iv, data: fixed(Array(label.utf8), 32) + fixed(value, 32))
    }

    /// C strncpy into a zeroed field: copy up to `width` bytes, pad with NULs.
    static func fixed(_ bytes: [UInt8], _ width: Int) -> [UInt8] {
        var out = Array(bytes.prefix(width))
        if out.count < width { out += [UInt8](repeating: 0, count: width - out.count) }
        return out
    }

    // MARK: - Tokens

    static func serialText(of token: SecurIDXMLElement) throws(ImportError) -> [UInt8] {
        guard let serial = text(of: "SN", in: token) else { throw ImportError(.malformed, ".sdtid file: a <TKN> has no <SN>") }
        guard (1...12).contains(serial.count), serial.allSatisfy(SecurIDText.isDigit) else {
            throw ImportError(.malformed, ".sdtid file: serial \"\(SecurIDText.printable(serial))\" is not 1 to 12 digits")
        }
        return serial
    }

    /// Everything a <TKN> says, validated, before any key is derived.
    struct TokenFields {
        var rawSerial: [UInt8]
        var serial: String
        var encryptedSeed: [UInt8]
        var tokenMAC: [UInt8]
        var parameters: SecurIDParameters
        var account: String?

        init(token: SecurIDXMLElement, header: SecurIDXMLElement) throws(ImportError) {
            rawSerial = try SecurIDSDTID.serialText(of: token)
            let serial = String(repeating: "0", count: 12 - rawSerial.count) + String(decoding: rawSerial, as: UTF8.self)
            self.serial = serial

            // Seed: one junk character, then base64 of the 16 encrypted bytes.
            guard let seedText = SecurIDSDTID.text(of: "Seed", in: token), seedText.count > 1,
                  let encrypted = SecurIDText.base64Decoded(Array(seedText.dropFirst())), encrypted.count == 16 else {
                throw ImportError(.malformed, ".sdtid token \(serial): <Seed> is missing or not base64 of 16 bytes after its first character")
            }
            encryptedSeed = encrypted
            tokenMAC = try SecurIDSDTID.base64Field("TokenMAC", in: token, length: 16)

            func setting(_ field: String, default value: Int) throws(ImportError) -> Int {
                guard let raw = SecurIDSDTID.lookup(field, token: token, header: header) else { return value }
                guard let number = SecurIDSDTID.integer(raw) else {
                    throw ImportError(.malformed, ".sdtid token \(serial): <\(field)> \"\(SecurIDText.printable(raw))\" is not a number")
                }
                return number
            }
            let algorithm = try setting("Alg", default: 0)
            let digits = try setting("Digits", default: 6)
            let interval = try setting("Interval", default: 60) == 60 ? 60 : 30
            let addsPIN = try setting("AddPIN", default: 0) != 0
            let localPIN = try setting("LocalPIN", default: 0) != 0
            let mode = try setting("Mode", default: 0) != 0
            let timeDerived = try setting("TimeDerivedSeeds", default: 0) != 0
            let appDerived = try setting("AppDerivedSeeds", default: 0) != 0
            guard algorithm == 1 else {
                throw ImportError(.unsupported, ".sdtid token \(serial) is not a 128-bit AES token (Alg \(algorithm)); only those are supported")
            }
            guard (1...8).contains(digits) else {
                throw ImportError(.unsupported, ".sdtid token \(serial) has \(digits)-digit tokencodes; 1 to 8 are possible")
            }
            guard let deathText = SecurIDSDTID.lookup("Death", token: token, header: header) else {
                throw ImportError(.malformed, ".sdtid token \(serial) has no expiration date (<Death> or <DefDeath>)")
            }
            guard let death = SecurIDSDTID.date(deathText) else {
                throw ImportError(.malformed, ".sdtid token \(serial): expiration date \"\(SecurIDText.printable(deathText))\" is not YYYY/MM/DD")
            }
            let flags = SecurIDParameters.flagsWord(digits: digits, interval: interval, addsPIN: addsPIN, localPIN: localPIN,
                                                    is128Bit: true, timeDerived: timeDerived, appDerived: appDerived, mode: mode)
            // A Death day of 2000-01-01 or earlier (day ≤ 0) would read as "no expiry": clamp
            // it to -1 so `problem` reports it and the import refuses it below.
            parameters = SecurIDParameters(digits: digits, interval: interval, addsPIN: addsPIN, localPIN: localPIN,
                                           expirationDay: death > 0 ? death : -1, flags: flags)
            let login = SecurIDSDTID.text(of: "UserLogin", in: token).map { String(decoding: $0, as: UTF8.self) }
            account = login?.isEmpty == false ? login : nil
        }

        /// The token with its seed decrypted (after the MACs were checked).
        func decrypt(with keys: TokenKeys, options: ImportOptions) throws(ImportError) -> ImportedToken {
            if parameters.expirationDay <= 0 {
                throw ImportError(.expired, "SecurID token \(serial) expired on or before 2000-01-01")
            }
            var label = SecurIDSDTID.fixed(rawSerial, 8) + Array("Seed".utf8) + [0, 0, 0, 0]
            var seed = SecurIDCrypto.encryptBlock(key: keys.encryption, label)
            SecurIDCrypto.wipe(&label)
            guard seed.count == 16 else { throw ImportError(.malformed, ".sdtid token \(serial): seed decryption failed") }
            for index in 0..<16 { seed[index] ^= encryptedSeed[index] }
            return try SecurIDImport.token(serial: serial, seed: &seed, parameters: parameters,
                                           account: account, source: "sdtid", options: options)
        }
    }

    /// A setting: `X` anywhere in the token, then `DefX` in the header, then `X` in the header.
    static func lookup(_ field: String, token: SecurIDXMLElement, header: SecurIDXMLElement) -> [UInt8]? {
        text(of: field, in: token) ?? text(of: "Def" + field, in: header) ?? text(of: field, in: header)
    }

    /// The trimmed text of the first descendant called `name`.
    static func text(of name: String, in element: SecurIDXMLElement) -> [UInt8]? {
        element.descendant(named: name).map { SecurIDText.trimmed($0.text) }
    }

    static func base64Field(_ name: String, in element: SecurIDXMLElement, length: Int) throws(ImportError) -> [UInt8] {
        guard let text = text(of: name, in: element) else {
            throw ImportError(.malformed, ".sdtid file: <\(element.nameText)> has no <\(name)>")
        }
        guard let value = SecurIDText.base64Decoded(text), value.count == length else {
            throw ImportError(.malformed, ".sdtid file: <\(name)> is not base64 of \(length) bytes")
        }
        return value
    }

    /// Integers as C's strtol with base 0 reads them, but strictly (the whole text must be a
    /// number): optional sign, then `0x` hex, a leading-zero octal, or decimal. Nil on any
    /// other character or beyond ±2^31.
    static func integer(_ text: [UInt8]) -> Int? {
        var digits = text[...]
        var negative = false
        if let sign = digits.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            digits = digits.dropFirst()
        }
        var base = 10
        if digits.count > 2, digits.first == UInt8(ascii: "0"),
           let marker = digits.dropFirst().first, marker == UInt8(ascii: "x") || marker == UInt8(ascii: "X") {
            base = 16
            digits = digits.dropFirst(2)
        } else if digits.count > 1, digits.first == UInt8(ascii: "0") {
            base = 8
        }
        guard !digits.isEmpty else { return nil }
        var value = 0
        for byte in digits {
            guard let digit = SecurIDText.hexValue(byte), Int(digit) < base else { return nil }
            value = value * base + Int(digit)
            guard value <= Int(Int32.max) else { return nil }
        }
        return negative ? -value : value
    }

    /// `YYYY/MM/DD` as days since 2000-01-01.
    static func date(_ text: [UInt8]) -> Int? {
        let parts = text.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard (1...4).contains(part.count), part.allSatisfy(SecurIDText.isDigit) else { return nil }
            numbers.append(part.reduce(0) { $0 * 10 + Int($1 - 0x30) })
        }
        return SecurIDParameters.day(year: numbers[0], month: numbers[1], day: numbers[2])
    }

    // MARK: - MAC input (§6.3)

    /// The bytes a HeaderMAC or TokenMAC covers: one "path text\n" line per leaf element
    /// (elements named "…MAC" skipped), laid out with the format's 16-byte alignment quirk.
    static func macInput(_ section: SecurIDXMLElement) -> [UInt8] {
        var lines: [[UInt8]] = []
        collectLines(section.children, path: section.name, into: &lines)

        var buffer: [UInt8] = []
        var position = 0
        var pad = 0
        for line in lines {
            if line.count + pad <= 16 { position -= position % 16 }
            let end = position + line.count + pad
            if buffer.count < end { buffer += [UInt8](repeating: 0, count: end - buffer.count) }
            for (offset, byte) in line.enumerated() { buffer[position + offset] = byte }
            for offset in (position + line.count)..<end { buffer[offset] = 0 }
            position = end
            pad = position % 16 == 0 ? 16 : position % 16
        }
        return Array(buffer.prefix(position))
    }

    private static func collectLines(_ children: [SecurIDXMLElement], path: [UInt8], into lines: inout [[UInt8]]) {
        let mac = Array("MAC".utf8)
        for child in children {
            if child.name.count > 3, child.name.suffix(3).elementsEqual(mac) { continue }
            let childPath = path + [UInt8(ascii: ".")] + child.name
            if !child.children.isEmpty {
                collectLines(child.children, path: childPath, into: &lines)
            } else if child.text.isEmpty {
                lines.append(childPath + Array(" </".utf8) + child.name + Array(">\n".utf8))
            } else {
                lines.append(childPath + [UInt8(ascii: " ")] + child.text + [UInt8(ascii: "\n")])
            }
        }
    }
}
