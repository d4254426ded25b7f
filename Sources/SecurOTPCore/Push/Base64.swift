/// Base64 (RFC 4648): the standard alphabet with padding (§4: device certificates and the
/// public key inside them) and the URL alphabet without padding (§5: the push API's binary
/// fields, the WebAuthn challenge). Trap-free and strict: decoding refuses other alphabets,
/// white space, wrong padding and non-zero trailing bits, so each byte string has exactly one
/// accepted text.
public enum Base64 {
    public enum Variant: Sendable {
        /// `+/` with `=` padding.
        case standard
        /// `-_` without padding.
        case url
    }

    /// What `decode` reads at most (in characters): the push API's largest binary field is a
    /// few hundred bytes; anything bigger is not ours.
    public static let maxDecodedLength = 16_384

    public static func encode(_ bytes: [UInt8], _ variant: Variant) -> String {
        let alphabet = variant == .standard ? standardAlphabet : urlAlphabet
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = bytes[index]
            let b1: UInt8 = remaining > 1 ? bytes[index + 1] : 0
            let b2: UInt8 = remaining > 2 ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            if remaining > 1 { out.append(alphabet[Int((b1 & 0x0f) << 2 | b2 >> 6)]) } else if variant == .standard { out.append(UInt8(ascii: "=")) }
            if remaining > 2 { out.append(alphabet[Int(b2 & 0x3f)]) } else if variant == .standard { out.append(UInt8(ascii: "=")) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil when it is not the canonical encoding in `variant`.
    public static func decode(_ text: String, _ variant: Variant) -> [UInt8]? {
        decode(Array(text.utf8), variant)
    }

    public static func decode(_ text: [UInt8], _ variant: Variant) -> [UInt8]? {
        guard text.count <= maxDecodedLength / 3 * 4 + 4 else { return nil }
        var body = text[...]
        if variant == .standard {
            guard text.count % 4 == 0 else { return nil }
            if body.last == UInt8(ascii: "=") { body = body.dropLast() }
            if body.last == UInt8(ascii: "=") { body = body.dropLast() }
        } else {
            guard text.count % 4 != 1 else { return nil }
        }
        var out: [UInt8] = []
        out.reserveCapacity(body.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in body {
            guard let value = sextet(character, variant) else { return nil }
            accumulator = (accumulator << 6 | UInt32(value)) & 0xffffff
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero (canonical encoding) and fewer than a byte.
        guard bits < 6, accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func sextet(_ character: UInt8, _ variant: Variant) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return variant == .standard ? 62 : nil
        case UInt8(ascii: "/"): return variant == .standard ? 63 : nil
        case UInt8(ascii: "-"): return variant == .url ? 62 : nil
        case UInt8(ascii: "_"): return variant == .url ? 63 : nil
        default: return nil
        }
    }
}
