// The host's methods bound the validator's (issue 25, item 3; docs/security.md): a preflight's
// `methods` may only narrow this host's `methods=`, never replace it; with `validator_may=deny-only`
// the host offers only what it verifies itself (device approvals under `device_ca=`), so a
// compromised validator can deny a login but never approve one. The real module through libpam
// against the stand-in validator of tests/push/fake_validator.py, playing a hostile validator
// that accepts the passcode 123456 for anyone.
import Foundation
import Testing

@Suite("The host's methods bound the validator's: a hostile validator can only narrow them")
struct HostMethodBoundTests {
    @Test("methods=push with device_ca: a validator answering methods [otp] and accepting any passcode logs nobody in; nothing is sent to /v1/verify")
    func validatorCannotWidenMethods() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, ["--methods", "otp"])
        let service = try validator.service(box, ["methods=push", "device_ca=" + validator.caPublicKey])
        let login = try box.login(service, "root", ["123456"])
        #expect(login.status == PAM.authError, "the validator's otp is not this host's: \(login)")
        #expect(login.prompts == [PAM.defaultPrompt], "prompted and refused: \(login)")
        let paths = try validator.requests().map(\.path)
        #expect(paths == ["/v1/preflight"], "no passcode sent, no push opened: \(paths)")

        // The validator's order narrows the host's: methods=push,otp and [otp] leave otp.
        let both = try validator.service(box, ["methods=push,otp"])
        let narrowed = try box.login(both, "root", ["123456"])
        #expect(narrowed.status == PAM.success, "\(narrowed)")
    }

    @Test("validator_may=deny-only with device_ca: a device approval logs in; a passcode is refused and never sent, whatever the validator says",
          arguments: [[], ["--methods", "otp,push"], ["--push", "no"]])
    func denyOnly(_ options: [String]) throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, options)
        let service = try validator.service(box, ["device_ca=" + validator.caPublicKey, "validator_may=deny-only"])
        let typed = try box.login(service, "root", ["123456"])
        #expect(typed.status == PAM.authError, "\(options): a passcode is the validator's word: \(typed)")
        #expect(try validator.bodies("/v1/verify").isEmpty, "\(options): never sent")
        guard !options.contains("--push") else { return }
        let approved = try box.login(service, "root", [validator.device("approve")])
        #expect(approved.status == PAM.success && PushPrompt.isApproval(approved.prompts.first), "\(options): \(approved)")
    }

    @Test("validator_may=deny-only without device_ca is a configuration error (the login fails closed)")
    func denyOnlyNeedsDeviceCA() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let login = try box.login(try validator.service(box, ["validator_may=deny-only"]), "root", ["123456"])
        #expect(login.status == PAM.serviceError, "\(login)")
        #expect(try validator.requests().isEmpty)
    }
}
