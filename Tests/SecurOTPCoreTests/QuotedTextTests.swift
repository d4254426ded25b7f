import Testing
@testable import SecurOTPCore

/// How errors quote configuration values: bounded, escaped, in quotes (TerminalText.quoted).
@Suite struct QuotedTextTests {
    /// The escaping itself is TerminalText's (TerminalTextTests); quoting adds `\` and `"`.
    @Test func quotesCannotBeFaked() {
        #expect(TerminalText.quoted("back\\slash \"quoted\"") == "\"back\\\\slash \\\"quoted\\\"\"")
        #expect(TerminalText.quoted("del\u{7f} csi\u{9b} \u{202E}") == "\"del\\x7f csi\\x9b \\u{202e}\"")
    }

    @Test func shortValuesAreQuotedWhole() {
        #expect(TerminalText.quoted("lots") == "\"lots\"")
        #expect(TerminalText.quoted("") == "\"\"")
        #expect(TerminalText.quoted(String(repeating: "x", count: 64)) == "\"" + String(repeating: "x", count: 64) + "\"")
    }

    @Test func longValuesAreCutWithTheirLength() {
        let value = "\u{1b}]0;owned\u{07}" + String(repeating: "9", count: 60_000) + "\u{202E}"
        let excerpt = TerminalText.quoted(value)
        #expect(excerpt == "\"\\x1b]0;owned\\x07" + String(repeating: "9", count: 54) + "\"… (60013 bytes)")
        #expect(!excerpt.unicodeScalars.contains { TerminalText.isUnsafe($0) })
        #expect(TerminalText.quoted("abcdef", limit: 3) == "\"abc\"… (6 bytes)")
    }

    /// One character may hold any number of scalars (combining marks): the limit counts scalars.
    @Test func theLimitCountsScalarsNotCharacters() {
        let value = "a" + String(repeating: "\u{301}", count: 10_000)
        #expect(value.count == 1)
        #expect(TerminalText.quoted(value).unicodeScalars.count < 100)
    }
}
