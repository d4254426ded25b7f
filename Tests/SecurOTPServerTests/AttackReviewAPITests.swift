import Foundation
import Hummingbird
@testable import SecurOTPServer
import Testing

/// What an attacker's review (issue 12) found in the validator's API: a host's scope told
/// apart at preflight, hostile user names stored and printed raw, unbounded request bodies,
/// metrics and the exact version for anyone who can reach the port.
@Suite("Validator API: attack review")
struct AttackReviewAPITests {
    @Test("Logs escape what callers sent: controls, DEL, C1 and bidi controls become visible escapes")
    func logfmtEscapes() {
        let quoted = LogfmtHandler.quote("/v1/\u{1b}[31m\u{9b}2J\u{7f}\u{202e}\u{2066}x")
        #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) || $0.value == 0x202e || $0.value == 0x2066 },
                "\(quoted.debugDescription)")
        #expect(quoted.contains("\\x1b") && quoted.contains("\\u{202e}"), "\(quoted)")
    }
}
