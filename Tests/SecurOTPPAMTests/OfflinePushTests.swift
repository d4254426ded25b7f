// The module's offline-approval pieces that need no validator (docs/push.md, "Offline
// approval"): the prompt, the push_offline option and its default, the `offline` flag.
import Foundation
import SecurOTPCore
import SecurOTPStore
import Testing
@testable import SecurOTPPAM

@Suite("Offline push approval: prompt, option, answer")
struct OfflinePushTests {
    @Test("The prompt keeps the number the only group of six digits; the challenge is two groups of four")
    func prompt() throws {
        let text = DialogueText.approveOnDevice(number: "492817", offlineChallenge: OfflineApproval.grouped("12345678"))
        #expect(text == "Approve on your device with number 492817, or type a code (offline challenge 1234 5678): ")
        #expect(TerminalText.isSafe(text) && text.utf8.count < 512)
        let groups = text.split(whereSeparator: { !$0.isNumber }).map(String.init)
        #expect(groups.filter { $0.count == 6 } == ["492817"] && groups.filter { $0.count == 4 } == ["1234", "5678"])
        // The host's challenge is the one the validator derives from the same request.
        let context = PushContext(service: "sshd", remoteAddress: "192.0.2.7", tty: "ssh", command: "")
        let challenge = PushChallenge(nonce: String(repeating: "A", count: 43), number: "492817")
        let request = PushApprovalCheck.Request(id: "pr" + String(repeating: "ab", count: 16), user: "alice", host: "web1", context: context,
                                                challenge: challenge, expires: 1_790_000_000)
        let statement = PushStatement(id: request.id, user: "alice", host: "web1", service: "sshd", remoteAddress: "192.0.2.7", tty: "ssh",
                                      command: "", nonce: challenge.nonce, number: "492817", expires: "1790000000", device: "")
        #expect(OfflineApproval.challenge(request.statement(device: "")) == OfflineApproval.challenge(statement))
    }

    @Test("push_offline: allow|deny; unset, deny with device_ca and allow without")
    func option() throws {
        let directory = NSTemporaryDirectory()
        let remote = ["state_dir=\(directory)", "validator=https://v.example:8443", "host_credential=/etc/h.cred"]
        #expect(try Settings.fromModuleArguments(remote).remote.offersOfflineApproval)
        #expect(try !Settings.fromModuleArguments(remote + ["device_ca=/etc/ca.pem"]).remote.offersOfflineApproval)
        #expect(try Settings.fromModuleArguments(remote + ["device_ca=/etc/ca.pem", "push_offline=allow"]).remote.offersOfflineApproval)
        #expect(try !Settings.fromModuleArguments(remote + ["push_offline=deny"]).remote.offersOfflineApproval)
        #expect(throws: StoreError.self) { try Settings.fromModuleArguments(remote + ["push_offline=yes"]) }
    }

    @Test("The push answer's offline flag: only true when the validator says true")
    func offlineFlag() throws {
        let id = "pr" + String(repeating: "ab", count: 16)
        func parse(_ text: String) -> OpenedPush? { JSONReader.parse(Array(text.utf8)).flatMap(OpenedPush.init) }
        #expect(parse(#"{"id":"\#(id)","expires":1790000000,"host":"web1","offline":true}"#)?.offline == true)
        #expect(parse(#"{"id":"\#(id)","expires":1790000000,"host":"web1"}"#)?.offline == false)
        #expect(parse(#"{"id":"\#(id)","expires":1790000000,"host":"web1","offline":"yes"}"#)?.offline == false)
    }
}
