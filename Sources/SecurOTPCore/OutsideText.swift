/// Text that came from outside (a configuration value, a file name, a user's answer), made fit
/// to quote in a log line or a terminal message: nothing in it can move the cursor, change the
/// terminal, reorder what follows (bidi controls) or start a fake log line, and `excerpt`
/// bounds how much of it is quoted (a 60 KB configuration value once became a 60 KB syslog
/// line). Foundation-free and trap-free: the PAM module quotes configuration values with it.
public enum OutsideText {
    /// `s` with every control character, bidi control and line separator written as an
    /// escape — `\x1b` for C0 controls and DEL, `\u{202e}` for the others — and `\` and `"`
    /// escaped, so an escape in the output always means an escape was made.
    public static func escaped(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars { append(scalar, to: &out) }
        return out
    }

    /// At most `limit` Unicode scalars of `s`, escaped like `escaped(_:)` and in double quotes;
    /// when `s` is longer, followed by `…` and its whole length in bytes:
    /// `"\x1b]0;owned\x07…"… (60042 bytes)`. Scalars, not characters: one character can hold
    /// any number of combining marks.
    public static func excerpt(_ s: String, limit: Int = 64) -> String {
        var out = "\""
        var taken = 0
        var truncated = false
        for scalar in s.unicodeScalars {
            if taken >= limit {
                truncated = true
                break
            }
            append(scalar, to: &out)
            taken += 1
        }
        out += "\""
        if truncated { out += "… (\(s.utf8.count) bytes)" }
        return out
    }

    /// Scalars shown as escapes: C0 controls, DEL, C1 controls (0x9B is a CSI on some
    /// terminals), the bidi embeddings, overrides, isolates and marks, and the Unicode line and
    /// paragraph separators.
    static func needsEscape(_ value: UInt32) -> Bool {
        switch value {
        case 0x00...0x1f, 0x7f...0x9f: true
        case 0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a...0x202e, 0x2066...0x2069: true
        default: false
        }
    }

    private static func append(_ scalar: Unicode.Scalar, to out: inout String) {
        let value = scalar.value
        if scalar == "\\" {
            out += "\\\\"
        } else if scalar == "\"" {
            out += "\\\""
        } else if !needsEscape(value) {
            out.unicodeScalars.append(scalar)
        } else if value < 0x80 {
            out += "\\x"
            out.unicodeScalars.append(hexDigit(value >> 4))
            out.unicodeScalars.append(hexDigit(value & 0xf))
        } else {
            out += "\\u{"
            var started = false
            var shift: UInt32 = 20
            while true {
                let digit = (value >> shift) & 0xf
                if digit != 0 || started || shift == 0 {
                    out.unicodeScalars.append(hexDigit(digit))
                    started = true
                }
                if shift == 0 { break }
                shift -= 4
            }
            out += "}"
        }
    }

    private static func hexDigit(_ value: UInt32) -> Unicode.Scalar {
        let digits: StaticString = "0123456789abcdef"
        return digits.withUTF8Buffer { Unicode.Scalar($0[Int(value & 0xf)]) }
    }
}
