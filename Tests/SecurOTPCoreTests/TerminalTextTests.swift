import SecurOTPCore
import Testing

@Suite("TerminalText: what outside text may print")
struct TerminalTextTests {
    @Test("Controls, DEL, C1, line separators and bidi controls become visible escapes; other text stays")
    func escapes() {
        #expect(TerminalText.escaped("alice") == "alice")
        #expect(TerminalText.escaped("jösé 名前 \\x") == "jösé 名前 \\x")
        #expect(TerminalText.escaped("\u{1b}]0;t\u{07}") == "\\x1b]0;t\\x07")
        #expect(TerminalText.escaped("a\nb\r\t\u{0}") == "a\\x0ab\\x0d\\x09\\x00")
        #expect(TerminalText.escaped("\u{7f}\u{80}\u{9b}") == "\\x7f\\x80\\x9b")
        #expect(TerminalText.escaped("\u{202e}evil\u{2066}\u{061c}\u{200f}\u{2028}") == "\\u{202e}evil\\u{2066}\\u{61c}\\u{200f}\\u{2028}")
        for value: UInt32 in [0x00, 0x1f, 0x7f, 0x9f, 0x061c, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0x2069] {
            let scalar = Unicode.Scalar(value)!
            #expect(TerminalText.isUnsafe(scalar), "U+\(String(value, radix: 16))")
            #expect(TerminalText.isSafe(TerminalText.escaped("x" + String(scalar))))
        }
        #expect(!TerminalText.isUnsafe(" ") && !TerminalText.isUnsafe("é") && !TerminalText.isUnsafe("\u{a0}"))
    }

    @Test("Excerpts and bounds: short, escaped, never a split character")
    func excerpts() {
        #expect(TerminalText.excerpt("short") == "short")
        #expect(TerminalText.excerpt(String(repeating: "\u{1b}", count: 100), maxScalars: 3) == "\\x1b\\x1b\\x1b…")
        #expect(TerminalText.bounded("abc", maxBytes: 3) == "abc")
        #expect(TerminalText.bounded(String(repeating: "é", count: 10), maxBytes: 8) == "éé…")
        #expect(TerminalText.bounded(String(repeating: "a", count: 100_000), maxBytes: 512).utf8.count <= 512)
        #expect(TerminalText.bounded("abcdef", maxBytes: 0) == "…")
    }
}
