// A phone without an app (docs/push.md "Phones without an app"): securotpd with public_url,
// a passkey played by Tests/Vectors/web_passkey.py (Python `cryptography`, an independent
// client that builds the attestation object, the assertions and the push statement itself),
// and a login through the real libpam loading the real module in remote mode.
import Foundation
import Testing

final class WebPasskeyWorld {
    static let passkey = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/web_passkey.py").path
    let box: Sandbox
    let validator: Validator
    let credential: String
    let token: Enrollment
    let state: String
    let log: String

    init() throws {
        box = try Sandbox()
        let validatorState = box.path("validator")
        credential = try RemoteWorld.addHost(box, state: validatorState, name: "web1")
        token = try box.enroll("root", stateDirectory: validatorState)
        let added = try box.cli(["device", "add", "root", "--format", "json"], stateDirectory: validatorState)
        guard added.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any],
              let code = object["activation_code"] as? String else { throw HarnessError("device add failed:\n\(added)") }
        validator = try Validator(box, state: validatorState, settings: ["public_url": "http://localhost:8080"], pki: nil)
        state = box.path("passkey.json")
        log = box.path("passkey.log")
        let enrolled = try Run.run("/usr/bin/python3", [Self.passkey, "enroll", validator.url, code, state])
        guard enrolled.status == 0 else { throw HarnessError("web enrollment failed:\n\(enrolled)") }
    }

    /// A login as root whose push prompt the passkey answers (`options` after the number), then `more`.
    func login(_ options: String = "", module: [String] = [], then more: [String] = []) throws -> ProcessResult {
        let script = box.path("page.sh")
        try box.write("""
            #!/bin/sh
            number=$(printf '%s' "$PAM_CHECK_PROMPT" | sed -n 's/^Approve on your device with number \\([0-9]\\{6\\}\\), or type a code: $/\\1/p')
            /usr/bin/python3 "\(Self.passkey)" approve "\(validator.url)" "\(state)" "$number" \(options) >> "\(log)" 2>&1
            echo
            """, to: script, mode: 0o755)
        let service = try box.service("push-web-\(UInt32.random(in: 0...UInt32.max))",
                                      ["validator=" + validator.url, "host_credential=" + credential, "push_timeout=10"] + module,
                                      stateDirectory: box.path("host"))
        return try box.login(service, "root", ["!/bin/sh " + script] + more, environment: ["PAM_CHECK_RHOST": "203.0.113.7", "PAM_CHECK_TTY": "ssh"])
    }

    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
}

@Suite("Push approval from a phone's passkey through the real module")
struct PushWebPasskeyTests {
    @Test("approved with the prompt's number: PAM_SUCCESS (also with web_origin= naming public_url)")
    func approve() throws {
        let world = try WebPasskeyWorld()
        let login = try world.login()
        #expect(login.status == PAM.success, "\(login)\npasskey: \(world.output)")
        #expect(login.prompts.count == 1 && PushPrompt.isApproval(login.prompts.first), "\(login)")
        let pinned = try world.login(module: ["web_origin=http://localhost:8080"])
        #expect(pinned.status == PAM.success, "\(pinned)\npasskey: \(world.output)")
    }

    @Test("refused: a foreign key's signature, a wrong origin (validator), another web_origin (host); the code prompt follows")
    func refused() throws {
        let world = try WebPasskeyWorld()
        let foreign = try world.login("--foreign-key", then: [try Oath.wrongTOTP(world.token.secret)])
        #expect(foreign.status == PAM.authError && foreign.prompts.count == 2, "\(foreign)\npasskey: \(world.output)")
        let elsewhere = try world.login("--origin http://localhost:9999", then: [try Oath.wrongTOTP(world.token.secret)])
        #expect(elsewhere.status == PAM.authError && elsewhere.prompts.count == 2, "\(elsewhere)\npasskey: \(world.output)")
        #expect(world.output.contains("wrong_origin"), "\(world.output)")
        let pinned = try world.login(module: ["web_origin=https://otp.example.com"], then: [try Oath.wrongTOTP(world.token.secret)])
        #expect(pinned.status == PAM.authError && pinned.prompts.last == PushPrompt.refused, "the host's own check: \(pinned)\npasskey: \(world.output)")
    }
}
