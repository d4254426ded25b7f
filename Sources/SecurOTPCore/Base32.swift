/// Base32 (RFC 4648 §6) as used for OATH secrets: case-insensitive, padding and spaces (and
/// dashes, as some issuers group the secret) tolerated on input.
public enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    public static func encode(_ secret: SecretBytes, padding: Bool = false) -> String {
        secret.withUnsafeBytes { encode($0, padding: padding) }
    }

    public static func encode(_ bytes: UnsafeBufferPointer<UInt8>, padding: Bool = false) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 8 + 4) / 5 + 8)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        if padding { while out.count % 8 != 0 { out.append(UInt8(ascii: "=")) } }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil for characters outside the alphabet, padding in the middle, or a length that cannot
    /// come from whole bytes.
    public static func decode(_ text: some Collection<UInt8>) -> SecretBytes? {
        var symbols = 0
        var sawPadding = false
        for character in text {
            switch character {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "-"): continue
            case UInt8(ascii: "="): sawPadding = true
            default:
                guard !sawPadding, value(of: character) != nil else { return nil }
                symbols += 1
            }
        }
        // 2, 4, 5 or 7 trailing symbols encode 1–4 bytes; 1, 3 or 6 cannot occur.
        guard [0, 2, 4, 5, 7].contains(symbols % 8) else { return nil }
        let secret = SecretBytes(count: symbols * 5 / 8)
        secret.withUnsafeMutableBytes { out in
            var buffer: UInt32 = 0
            var bits = 0
            var written = 0
            for character in text {
                guard let v = value(of: character) else { continue }
                buffer = (buffer << 5 | UInt32(v)) & 0xffff
                bits += 5
                if bits >= 8, written < out.count {
                    out[written] = UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8))
                    written += 1
                    bits -= 8
                }
            }
            buffer = 0
        }
        return secret
    }

    public static func decode(_ text: String) -> SecretBytes? { decode(Array(text.utf8)) }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): character - UInt8(ascii: "2") + 26
        default: nil
        }
    }
}
