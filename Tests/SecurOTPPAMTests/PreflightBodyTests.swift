// The preflight's size against the validator's host body limit (docs/design.md, "Login
// methods in remote mode", "How many groups").
import Testing
@testable import SecurOTPPAM

@Suite("Remote mode: the preflight fits the validator's body limit, or is not sent")
struct PreflightBodyTests {
    @Test("1024 groups of 60-byte names fit; 1024 of 256-byte names are refused here, never sent to meet a bare 413")
    func groupsAgainstBodyLimit() {
        let fitting = (0..<1024).map { String(repeating: "g", count: 56) + String(1000 + $0) }
        #expect(RemoteVerification.preflightBody(user: "alice", groups: fitting) != nil)
        let longest = (0..<1024).map { String(repeating: "g", count: 252) + String(1000 + $0) }
        #expect(RemoteVerification.preflightBody(user: "alice", groups: longest) == nil)
        #expect(RemoteVerification.maxRequestBytes == 64 * 1024, "securotpd's BodyLimit.host")
    }
}
