/// Text from outside (user names a host sent, request paths, audit rows) made safe to print:
/// the one escaping every human-readable output uses — CLI tables, the daemon's logs, the
/// module's syslog lines — so no terminal control sequence, fake line or reordered text
/// (bidi override) reaches an admin's terminal. Foundation-free and trap-free (the module
/// links it).
public enum TerminalText {
    /// C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidi
    /// controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069).
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1f, 0x7f...0x9f: true
        case 0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a...0x202e, 0x2066...0x2069: true
        default: false
        }
    }

    /// Whether `text` prints as it is.
    public static func isSafe(_ text: String) -> Bool {
        !text.unicodeScalars.contains(where: isUnsafe)
    }

    /// `text` with every unsafe scalar as a visible escape: `\x1b` below U+0100, `\u{202e}`
    /// above. Safe text comes back unchanged.
    public static func escaped(_ text: String) -> String {
        isSafe(text) ? text : escapedPrefix(text, limit: Int.max, quoting: false).text
    }

    /// At most `maxScalars` scalars of `text`, escaped, with "…" when some were left off:
    /// how an invalid name is named in an error message or the audit log.
    public static func excerpt(_ text: String, maxScalars: Int = 32) -> String {
        let (body, cut) = escapedPrefix(text, limit: maxScalars, quoting: false)
        return cut ? body + "…" : body
    }

    /// At most `limit` scalars of `text` in double quotes, escaped — and `\` and `"` too, so
    /// that a quote inside cannot end the quotation; a longer text is followed by `…` and its
    /// whole length in bytes: `"\x1b]0;owned\x07…"… (60042 bytes)`. How an error quotes a
    /// configuration value or path (a 60 KB value once became a 60 KB syslog line). Scalars, not
    /// characters: one character can hold any number of combining marks.
    public static func quoted(_ text: String, limit: Int = 64) -> String {
        let (body, cut) = escapedPrefix(text, limit: limit, quoting: true)
        return "\"" + body + (cut ? "\"… (\(text.utf8.count) bytes)" : "\"")
    }

    /// The first `limit` scalars of `text` with the unsafe ones escaped (with `quoting`, also
    /// `\` and `"`), and whether scalars were left off.
    private static func escapedPrefix(_ text: String, limit: Int, quoting: Bool) -> (text: String, cut: Bool) {
        var out = ""
        var taken = 0
        for scalar in text.unicodeScalars {
            if taken >= limit { return (out, true) }
            if quoting && (scalar == "\\" || scalar == "\"") {
                out += "\\"
                out.unicodeScalars.append(scalar)
            } else if isUnsafe(scalar) {
                out += escape(scalar)
            } else {
                out.unicodeScalars.append(scalar)
            }
            taken += 1
        }
        return (out, false)
    }

    /// The first `maxBytes` UTF-8 bytes of `text` or fewer (never a split scalar), with "…"
    /// when some were left off.
    public static func bounded(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var out = ""
        var used = 0
        for scalar in text.unicodeScalars {
            let size = UTF8.width(scalar)
            if used + size > maxBytes - 3 { break }
            out.unicodeScalars.append(scalar)
            used += size
        }
        return out + "…"
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let value = scalar.value
        var out: [UInt8] = value < 0x100 ? Array("\\x".utf8) : Array("\\u{".utf8)
        var shift: UInt32 = value < 0x100 ? 4 : (value < 0x1000 ? 8 : (value < 0x10000 ? 12 : (value < 0x100000 ? 16 : 20)))
        while true {
            out.append(digits[Int((value >> shift) & 0xf)])
            if shift == 0 { break }
            shift -= 4
        }
        if value >= 0x100 { out.append(UInt8(ascii: "}")) }
        return String(decoding: out, as: UTF8.self)
    }
}
