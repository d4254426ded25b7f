import SecurOTPCore
import Testing
@testable import SecurOTPPAM

/// Holding a factor is not being able to use it now (docs/security.md): what the module reads
/// from a preflight for `nullok`.
@Suite struct HoldingTests {
    private func parse(_ text: String) -> PreflightAnswer? { JSONReader.parse(Array(text.utf8)).flatMap(PreflightAnswer.init) }

    @Test("holds_factor: a holder with nothing usable now is a holder; never less than has_tokens, push or fido; an older validator keeps their rule")
    func holdsFactor() throws {
        #expect(parse(#"{"has_tokens":false,"code_digits":[]}"#)?.holdsFactor == false, "an older validator, a user with nothing")
        #expect(parse(#"{"has_tokens":false,"code_digits":[],"holds_factor":false}"#)?.holdsFactor == false)
        #expect(parse(#"{"has_tokens":false,"code_digits":[],"holds_factor":true}"#)?.holdsFactor == true, "a blocked device only")
        #expect(parse(#"{"has_tokens":true,"code_digits":[6],"holds_factor":false}"#)?.holdsFactor == true)
        #expect(parse(#"{"has_tokens":false,"code_digits":[],"push":true,"holds_factor":false}"#)?.holdsFactor == true)
        #expect(parse(#"{"has_tokens":false,"code_digits":[],"fido":true}"#)?.holdsFactor == true)
        #expect(parse(#"{"has_tokens":false,"code_digits":[],"holds_factor":null}"#)?.holdsFactor == false)
        #expect(parse(#"{"has_tokens":false,"code_digits":[],"holds_factor":"yes"}"#) == nil, "unreadable, not a non-holder")
    }
}
