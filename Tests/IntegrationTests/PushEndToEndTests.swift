// Push approval with every real part (docs/push.md): securotpd on SQLite over loopback HTTP,
// `securotp device add` on its store, securotp-authenticator activated as the user's device in
// its own XDG_DATA_HOME, and a login through the real libpam loading the real module in remote
// mode. The user is played by a pam-check "!command" answer: it reads the number from the push
// prompt, acts on the device with securotp-authenticator (pending, then approve or deny), and
// presses Enter.
import Foundation
import Glibc
import Testing

/// One validator, one host credential, one activated device and a TOTP token for root.
final class PushDeviceWorld {
    static let pin = "2468"
    let box: Sandbox
    let validator: Validator
    let service: String
    let token: Enrollment
    private let authenticator: String
    /// The authenticator's store in XDG_DATA_HOME only (no --data-dir), never the runner's.
    let deviceEnvironment: [String: String]
    private let pinFile: String
    private let script: String
    /// What the device saw and was told, for the test to read after the login.
    let pendingFile: String
    let deviceLog: String

    init() throws {
        box = try Sandbox()
        let state = box.path("validator")
        let credential = try RemoteWorld.addHost(box, state: state, name: "web1")
        token = try box.enroll("root", stateDirectory: state)
        let added = try box.cli(["device", "add", "root", "--format", "json"], stateDirectory: state)
        guard added.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any],
              let code = object["activation_code"] as? String else { throw HarnessError("device add failed:\n\(added)") }
        validator = try Validator(box, state: state, pki: nil)

        authenticator = try Binaries.authenticator()
        deviceEnvironment = AuthenticatorRunner.cleanEnvironment.merging(["XDG_DATA_HOME": box.path("xdg"), "HOME": box.path("home")]) { _, new in new }
        pinFile = box.path("device.pin")
        try box.write(Self.pin + "\n", to: pinFile, mode: 0o600)
        let activated = try Run.run(authenticator, ["activate", code, "--server", validator.url, "--pin-file", pinFile, "--name", "phone"],
                                    environment: deviceEnvironment)
        guard activated.status == 0, activated.stdout.contains("is active at") else { throw HarnessError("activate failed:\n\(activated)") }

        pendingFile = box.path("pending.json")
        deviceLog = box.path("device.log")
        script = box.path("device.sh")
        try box.write(Self.deviceScript, to: script, mode: 0o755)
        service = try box.service("push-e2e", ["validator=" + validator.url, "host_credential=" + credential, "push_timeout=10"],
                                  stateDirectory: box.path("host"))
    }


    /// `decision`: approve (the number from the prompt), wrong (three approvals with another
    /// number) or deny. The script's only output line is the Enter that follows.
    static let deviceScript = """
        #!/bin/sh
        set -u
        number=$(printf '%s' "$PAM_CHECK_PROMPT" | sed -n 's/^Approve on your device with number \\([0-9]\\{6\\}\\), or type a code.*: $/\\1/p')
        "$DEVICE_AUTHENTICATOR" pending --format json > "$DEVICE_PENDING" 2>> "$DEVICE_LOG"
        id=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r[0]["id"] if r else "")' "$DEVICE_PENDING")
        case "$DEVICE_DECISION" in
        approve) "$DEVICE_AUTHENTICATOR" approve "$id" --number "$number" --pin-file "$DEVICE_PIN_FILE" ;;
        wrong)
            other=$(printf '%s' "$number" | tr 0123456789 1234567890)
            for attempt in 1 2 3; do "$DEVICE_AUTHENTICATOR" approve "$id" --number "$other" --pin-file "$DEVICE_PIN_FILE"; echo "exit $?"; done ;;
        deny) "$DEVICE_AUTHENTICATOR" deny "$id" ;;
        esac >> "$DEVICE_LOG" 2>&1
        echo
        """

    /// A login as root whose push prompt is answered by the device script, then `more`.
    func login(_ decision: String, then more: [String] = []) throws -> ProcessResult {
        let environment = deviceEnvironment.merging([
            "DEVICE_AUTHENTICATOR": authenticator, "DEVICE_DECISION": decision, "DEVICE_PIN_FILE": pinFile,
            "DEVICE_PENDING": pendingFile, "DEVICE_LOG": deviceLog, "PAM_CHECK_RHOST": "203.0.113.7", "PAM_CHECK_TTY": "ssh",
        ]) { _, new in new }
        return try box.login(service, "root", ["!/bin/sh " + script] + more, environment: environment)
    }

    /// The requests `pending --format json` listed during the last login.
    func pending() throws -> [[String: Any]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: pendingFile))
        return (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    }

    var deviceOutput: String { (try? String(contentsOfFile: deviceLog, encoding: .utf8)) ?? "" }
}

@Suite("Push approval end to end: securotpd, securotp device add, securotp-authenticator and the module through libpam")
struct PushEndToEndTests {
    @Test("Approved on the device with the prompt's number, then Enter: PAM_SUCCESS, and the device saw who logs in where")
    func approve() throws {
        let world = try PushDeviceWorld()
        let login = try world.login("approve")
        #expect(login.status == PAM.success, "\(login)\ndevice: \(world.deviceOutput)")
        #expect(login.prompts.count == 1 && PushPrompt.isApproval(login.prompts.first), "\(login)")
        #expect(world.deviceOutput.contains("Request approved"), "\(world.deviceOutput)")
        let requests = try world.pending()
        #expect(requests.count == 1, "\(requests)")
        let request = try #require(requests.first)
        #expect(request["user"] as? String == "root" && request["host"] as? String == "web1" && request["service"] as? String == world.service,
                "\(request)")
        #expect(request["remote_address"] as? String == "203.0.113.7" && request["tty"] as? String == "ssh", "\(request)")
        #expect(request["number"] == nil, "the device is never told the number: \(request)")
    }

    @Test("Denied on the device: the code prompt follows; a wrong code fails, the token's code logs in")
    func deny() throws {
        let world = try PushDeviceWorld()
        let wrong = try world.login("deny", then: [try Oath.wrongTOTP(world.token.secret)])
        #expect(wrong.status == PAM.authError, "\(wrong)\ndevice: \(world.deviceOutput)")
        #expect(wrong.prompts.count == 2 && PushPrompt.isApproval(wrong.prompts.first) && wrong.prompts.last == PushPrompt.denied, "\(wrong)")
        #expect(world.deviceOutput.contains("Request denied"), "\(world.deviceOutput)")

        let login = try world.login("deny", then: [try Oath.totp(world.token.secret)])
        #expect(login.status == PAM.success, "\(login)\ndevice: \(world.deviceOutput)")
        #expect(login.prompts.last == PushPrompt.denied, "\(login)")
    }

    @Test("Another number typed on the device: the validator answers wrong number, three of them fail the request, and the login does not succeed on push")
    func wrongNumber() throws {
        let world = try PushDeviceWorld()
        let started = Date()
        let login = try world.login("wrong", then: [try Oath.wrongTOTP(world.token.secret)])
        #expect(login.status == PAM.authError, "\(login)\ndevice: \(world.deviceOutput)")
        #expect(login.prompts.count == 2 && PushPrompt.isApproval(login.prompts.first), "\(login)")
        #expect(login.prompts.last == "Wrong number typed on your device. Verification code: ", "\(login)")
        // Two wrong numbers leave the request pending, the third fails it (docs/push.md).
        #expect(world.deviceOutput.components(separatedBy: "state pending (wrong number)").count == 3
                    && world.deviceOutput.contains("state failed (wrong number)"), "\(world.deviceOutput)")
        #expect(!world.deviceOutput.contains("Request approved"), "\(world.deviceOutput)")
        #expect(Date().timeIntervalSince(started) < 20, "bounded by push_timeout")
    }
}
