import Testing
@testable import SecurOTPCore

@Suite struct OutsideTextTests {
    @Test(arguments: [
        ("plain text", "plain text"),
        ("\u{1b}[31mred", "\\x1b[31mred"),
        ("tab\there\r\n", "tab\\x09here\\x0d\\x0a"),
        ("del\u{7f} csi\u{9b}", "del\\x7f csi\\u{9b}"),
        ("\u{202E}evil\u{2066}\u{2069}\u{200E}\u{200F}\u{061C}\u{2028}", "\\u{202e}evil\\u{2066}\\u{2069}\\u{200e}\\u{200f}\\u{61c}\\u{2028}"),
        ("back\\slash \"quoted\"", "back\\\\slash \\\"quoted\\\""),
        ("ünïcødé ✓", "ünïcødé ✓"),
    ])
    func escaped(_ input: String, _ expected: String) {
        #expect(OutsideText.escaped(input) == expected)
    }

    @Test func shortValuesAreQuotedWhole() {
        #expect(OutsideText.excerpt("lots") == "\"lots\"")
        #expect(OutsideText.excerpt("") == "\"\"")
        #expect(OutsideText.excerpt(String(repeating: "x", count: 64)) == "\"" + String(repeating: "x", count: 64) + "\"")
    }

    @Test func longValuesAreCutWithTheirLength() {
        let value = "\u{1b}]0;owned\u{07}" + String(repeating: "9", count: 60_000) + "\u{202E}"
        let excerpt = OutsideText.excerpt(value)
        #expect(excerpt == "\"\\x1b]0;owned\\x07" + String(repeating: "9", count: 54) + "\"… (60013 bytes)")
        #expect(!excerpt.unicodeScalars.contains { OutsideText.needsEscape($0.value) })
        #expect(OutsideText.excerpt("abcdef", limit: 3) == "\"abc\"… (6 bytes)")
    }

    /// One character may hold any number of scalars (combining marks): the limit counts scalars.
    @Test func theLimitCountsScalarsNotCharacters() {
        let value = "a" + String(repeating: "\u{301}", count: 10_000)
        #expect(value.count == 1)
        #expect(OutsideText.excerpt(value).unicodeScalars.count < 100)
    }
}
