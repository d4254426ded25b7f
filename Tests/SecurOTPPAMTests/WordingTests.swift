// Counted words in the module's log lines: "1 consecutive failure", never "1 consecutive failures".
import SecurOTPStore
import Testing

@Suite("Counted words")
struct WordingTests {
    @Test("One is singular, everything else plural")
    func counts() {
        #expect(Wording.count(1, "consecutive failure") == "1 consecutive failure")
        #expect(Wording.count(0, "consecutive failure") == "0 consecutive failures")
        #expect(Wording.count(5, "consecutive failure") == "5 consecutive failures")
        #expect(Wording.count(-1, "second") == "-1 seconds")
        #expect(Wording.count(2, "entry", plural: "entries") == "2 entries")
        #expect(Wording.count(1, "entry", plural: "entries") == "1 entry")
    }
}
