// Offline approval (docs/push.md, "Offline approval") through the real libpam loading the real
// module, against tests/push/fake_validator.py, whose challenge and OCRA are written in Python
// from the contract: the user reads the challenge from the prompt, the device answers it, and
// the answer goes to /v1/verify with push_id in one call.
import Foundation
import Testing

@Suite("Offline push approval: the module's side, against a stand-in validator")
struct PushOfflineLoginTests {
    static let secret = String(repeating: "5c", count: 32)
    static let prompt = #"^Approve on your device with number [0-9]{6}, or type a code \(offline challenge [0-9]{4} [0-9]{4}\): $"#

    @Test("The device's offline response at the push prompt: PAM_SUCCESS, one /v1/verify with push_id and no cancel")
    func respond() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, ["--offline-secret", Self.secret])
        let service = try validator.service(box)
        let login = try box.login(service, "root", [validator.device("respond", ["--secret", Self.secret])])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.count == 1 && login.prompts.first?.range(of: Self.prompt, options: .regularExpression) != nil, "\(login)")
        let paths = try validator.requests().map(\.path)
        #expect(paths == ["/v1/preflight", "/v1/push", "/v1/verify"], "\(paths)")
        let verify = try #require(try validator.bodies("/v1/verify").first)
        // The request the validator opened (its id is in the answer, not in the host's body).
        #expect((verify["push_id"] as? String)?.range(of: "^pr[0-9a-f]{32}$", options: .regularExpression) != nil, "\(verify)")

        // A response made with another secret is a wrong passcode.
        let wrong = try box.login(service, "root", [validator.device("respond", ["--secret", String(repeating: "00", count: 32)]), "000000"])
        #expect(wrong.status == PAM.authError, "\(wrong)")
        // A passcode at the same prompt still works, in the same one call.
        let code = try box.login(service, "root", ["123456"])
        #expect(code.status == PAM.success, "\(code)")
        #expect(try validator.requests().map(\.path).contains("/v1/push/cancel") == false)
    }

    @Test("Methods without otp (a group's policy only the preflight carries): no offline challenge; a typed answer withdraws the request, is never sent")
    func pushOnly() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, ["--offline-secret", Self.secret, "--methods", "push"])
        let service = try validator.service(box)
        let login = try box.login(service, "root", ["123456"])
        #expect(login.status == PAM.authError, "\(login)")
        #expect(PushPrompt.isApproval(login.prompts.first) && login.prompts.first?.contains("offline challenge") == false, "\(login.prompts)")
        let paths = try validator.requests().map(\.path)
        #expect(paths == ["/v1/preflight", "/v1/push", "/v1/push/cancel"], "\(paths)")
    }

    @Test("device_ca= hides the offline challenge unless push_offline=allow; push_offline=deny hides it always")
    func policy() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, ["--offline-secret", Self.secret])
        for (options, shown) in [(["device_ca=" + validator.caPublicKey], false), (["device_ca=" + validator.caPublicKey, "push_offline=allow"], true),
                                 (["push_offline=deny"], false)] {
            let service = try validator.service(box, options)
            let login = try box.login(service, "root", ["123456"])
            #expect(login.status == PAM.success, "\(options): \(login)")
            let offered = login.prompts.first?.contains("offline challenge") == true
            #expect(offered == shown, "\(options): \(login.prompts)")
            #expect(shown || PushPrompt.isApproval(login.prompts.first), "\(options): \(login.prompts)")
        }
    }
}
