import SecurOTPCore
import SecurOTPSecurID

/// Small byte-level helpers shared by the SecurID importers (CTF strings and .sdtid files).
enum SecurIDText {
    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    static func upper(_ byte: UInt8) -> UInt8 { byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte }

    /// The parts concatenated into one exactly-sized array. Unlike chained `+`, this leaves
    /// no intermediate arrays behind, so a caller that wipes the result wipes every copy of
    /// a password or key it contains.
    static func joined(_ parts: [[UInt8]]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(parts.reduce(0) { $0 + $1.count })
        for part in parts { out.append(contentsOf: part) }
        return out
    }

    static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return Array(bytes[start..<end])
    }

    /// Case-insensitive (ASCII) search; the index of the first match at or after `from`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int = 0) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var start = max(0, from)
        while start + needle.count <= haystack.count {
            var match = true
            for offset in 0..<needle.count where upper(haystack[start + offset]) != upper(needle[offset]) {
                match = false
                break
            }
            if match { return start }
            start += 1
        }
        return nil
    }

    static func hasPrefix(_ bytes: [UInt8], _ prefix: String) -> Bool {
        let p = Array(prefix.utf8)
        return bytes.count >= p.count && find(p, in: Array(bytes.prefix(p.count))) == 0
    }

    /// RFC 3986 percent-decoding; nil for a `%` not followed by two hex digits. `+` stays `+`
    /// (base64 uses it; RSA's URLs encode it as %2B anyway).
    static func percentDecoded(_ bytes: [UInt8]) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                      let low = hexValue(bytes[index + 2]) else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// Standard base64 (RFC 4648 §4, `+` and `/`). ASCII whitespace is skipped; `=` padding
    /// may be present (only at the end) or missing. Nil for any other character or an
    /// impossible length.
    static func base64Decoded(_ text: [UInt8]) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var symbols = 0
        var padding = 0
        for byte in text {
            if isSpace(byte) { continue }
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, let value = base64Value(byte) else { return nil }
            accumulator = (accumulator << 6 | UInt32(value)) & 0xFFFFFF
            bits += 6
            symbols += 1
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // A final group of 1 symbol cannot encode a byte; padding must complete the group.
        let remainder = symbols % 4
        guard remainder != 1, padding == 0 || (remainder + padding == 4 && padding <= 2) else { return nil }
        accumulator = 0
        return out
    }

    private static func base64Value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x41...0x5A: byte - 0x41
        case 0x61...0x7A: byte - 0x61 + 26
        case 0x30...0x39: byte - 0x30 + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    /// Bytes for use in a message, with unprintable ones escaped.
    static func printable(_ bytes: some Collection<UInt8>, limit: Int = 40) -> String {
        var out = ""
        for byte in bytes.prefix(limit) {
            if byte >= 0x20 && byte < 0x7F {
                out.append(Character(Unicode.Scalar(byte)))
            } else {
                out += "\\x" + String(byte, radix: 16)
            }
        }
        if bytes.count > limit { out += "…" }
        return out
    }
}

/// Building the shared `ImportedToken` for a decoded SecurID seed.
enum SecurIDImport {
    /// The ImportedToken for a checked, decrypted token. `seed` is copied into SecretBytes
    /// and wiped. Expiry is checked against `options.now`.
    static func token(serial: String, seed: inout [UInt8], parameters: SecurIDParameters,
                      account: String? = nil, source: String,
                      options: ImportOptions) throws(ImportError) -> ImportedToken {
        defer { SecurIDCrypto.wipe(&seed) }
        guard seed.count == 16 else { throw ImportError(.malformed, "the SecurID seed is not 16 bytes") }
        if let problem = parameters.problem { throw ImportError(.unsupported, "token \(serial): \(problem)") }
        if parameters.isExpired(at: options.now), let end = parameters.expiresAt {
            throw ImportError(.expired, "SecurID token \(serial) expired on \(dateText(dayBefore: end)) (UTC)")
        }
        return ImportedToken(kind: .securID(parameters), secret: SecretBytes(copying: seed), serial: serial,
                             account: account, pinMode: parameters.addsPIN ? .addedByToken : .prefix,
                             expires: parameters.expiresAt, source: source)
    }

    /// "YYYY-MM-DD" of the last day before the Unix time `end` (the expiration day itself).
    static func dateText(dayBefore end: Int64) -> String {
        let days = (end - 1) / 86_400 - 10_957   // days since 2000-01-01, end > 946684800
        return dateText(day: Int(days))
    }

    /// "YYYY-MM-DD" for a day counted from 2000-01-01.
    static func dateText(day: Int) -> String {
        // Walk from 2000 in whole years then months; fine for the 0...~3.3 million day range
        // the formats can express (a few thousand iterations at most).
        var remaining = max(0, day)
        var year = 2000
        while true {
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            let length = leap ? 366 : 365
            if remaining < length || year >= 9999 { break }
            remaining -= length
            year += 1
        }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let months = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        var month = 0
        while month < 11, remaining >= months[month] {
            remaining -= months[month]
            month += 1
        }
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month + 1))-\(two(remaining + 1))"
    }
}
