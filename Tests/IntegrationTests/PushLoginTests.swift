// Push approval through the real libpam loading the real module, against a stand-in validator
// written in Python from docs/push.md alone (tests/push/fake_validator.py). It plays the
// user's device too, signing statements with its own ES256 key, and can misbehave as a
// compromised validator might: a signature over another number, an earlier login's approval
// handed to a new request, a device certified by another CA. The device is driven from
// pam-check "!command" answers, which read the number from the prompt as a user would.
import Foundation
import Glibc
import Testing

/// tests/push/fake_validator.py, serving on 127.0.0.1.
final class PushValidator {
    static let script = Binaries.packageRoot + "/tests/push/fake_validator.py"
    static let python = "/usr/bin/python3"

    let child: Child
    let port: Int
    private let logFile: String
    /// The admin CA's public key (PEM) that certifies the device with `--certificate valid`.
    let caPublicKey: String
    var url: String { "http://127.0.0.1:\(port)" }

    init(_ box: Sandbox, _ options: [String] = []) throws {
        guard (try? Run.run(Self.python, ["-c", "import cryptography"]))?.status == 0 else {
            throw HarnessError("\(Self.python) cannot import cryptography: install python3-cryptography (scripts/install-deps.sh test)")
        }
        let stem = box.path("push-\(UUID().uuidString.prefix(8))")
        let portFile = stem + ".port"
        logFile = stem + ".log"
        caPublicKey = stem + "-ca.pem"
        child = try Run.start(Self.python, [Self.script, "serve", "--port-file", portFile, "--log", logFile, "--ca-public", caPublicKey] + options)
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: portFile) {
            if Date() > deadline || child.errorOutput.contains("Traceback") {
                kill(child.pid, SIGKILL)
                throw HarnessError("the push validator did not start:\n\(try child.wait(timeout: 5))")
            }
            usleep(20_000)
        }
        port = Int(try String(contentsOfFile: portFile, encoding: .utf8)) ?? 0
        box.keepAlive(self)
    }

    deinit {
        kill(child.pid, SIGTERM)
        _ = try? child.wait(timeout: 10)
    }

    /// A pam-check answer: the user acts on the device (reading the number from the prompt),
    /// then presses Enter — or types `answer`.
    func device(_ decision: String, _ options: [String] = []) -> String {
        "!" + ([Self.python, Self.script, "device", url, decision] + options).joined(separator: " ")
    }

    /// Every host request so far (path and JSON body), in order.
    func requests() throws -> [(path: String, body: [String: Any])] {
        guard let text = try? String(contentsOfFile: logFile, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let path = entry["path"] as? String, let body = entry["body"] as? String else { return nil }
            return (path, (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:])
        }
    }

    func bodies(_ path: String) throws -> [[String: Any]] { try requests().filter { $0.path == path }.map(\.body) }

    /// A service whose module asks this validator (a made-up host credential: it only checks
    /// the shape).
    func service(_ box: Sandbox, _ more: [String] = []) throws -> String {
        let credential = box.path("host.cred")
        if !FileManager.default.fileExists(atPath: credential) {
            try box.write("sotp_h_0123456789abcdef_" + String(repeating: "5a", count: 32) + "\n", to: credential, mode: 0o600)
        }
        return try box.service("push-\(UUID().uuidString.prefix(6).lowercased())", ["validator=" + url, "host_credential=" + credential] + more,
                               stateDirectory: box.path("host"))
    }
}

enum PushPrompt {
    /// The number as one group of six digits (and, when the user's device has offline mode,
    /// the offline challenge as two groups of four: docs/push.md "Offline approval").
    static func isApproval(_ prompt: String?) -> Bool {
        guard var prompt, prompt.hasPrefix("Approve on your device with number ") else { return false }
        if let offline = prompt.range(of: " (offline challenge ") {
            let groups = prompt[offline.upperBound...].dropLast("): ".count).split(separator: " ")
            guard prompt.hasSuffix("): "), groups.count == 2, groups.allSatisfy({ $0.count == 4 && $0.allSatisfy { $0.isASCII && $0.isNumber } })
            else { return false }
            prompt = String(prompt[..<offline.lowerBound]) + ": "
        }
        guard prompt.hasSuffix(", or type a code: ") else { return false }
        let number = prompt.dropFirst("Approve on your device with number ".count).dropLast(", or type a code: ".count)
        return number.count == 6 && number.allSatisfy { $0.isASCII && $0.isNumber }
    }
    static let denied = "Not approved on your device. Verification code: "
    static let expired = "No approval from your device in time. Verification code: "
    static let refused = "Your device's approval was refused. Verification code: "
    static let wrongNumbers = "Wrong number typed on your device. Verification code: "
}

@Suite("Push approval: the module's side, against a stand-in validator that plays the device")
struct PushLoginTests {
    @Test("Approved on the device, then Enter: PAM_SUCCESS; the number is one group of six digits in the prompt",
          arguments: ["approved", "consumed"])
    func approve(_ stateWithApproval: String) throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, ["--approval-state", stateWithApproval])
        let service = try validator.service(box)
        let login = try box.login(service, "root", [validator.device("approve")],
                                  environment: ["PAM_CHECK_RHOST": "203.0.113.7", "PAM_CHECK_TTY": "ssh"])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.count == 1 && PushPrompt.isApproval(login.prompts.first), "\(login)")
        let requests = try validator.requests()
        #expect(requests.map(\.path) == ["/v1/preflight", "/v1/push", "/v1/push/wait", "/v1/push/result"], "\(requests.map(\.path))")
        let push = try #require(try validator.bodies("/v1/push").first)
        #expect(push["user"] as? String == "root" && push["service"] as? String == service, "\(push)")
        #expect(push["remote_address"] as? String == "203.0.113.7" && push["tty"] as? String == "ssh" && push["command"] as? String == "", "\(push)")
        let number = try #require(push["number"] as? String)
        #expect(login.prompts.first?.contains(number) == true, "the prompt shows the number the host sent: \(login.prompts)")
        #expect((push["nonce"] as? String)?.count == 43, "32 bytes, base64url without padding: \(push)")
        let result = try #require(try validator.bodies("/v1/push/result").first)
        let waited = try validator.bodies("/v1/push/wait").first?["id"] as? String
        #expect(result["accepted"] as? Bool == true && result["id"] as? String == waited, "\(result)")
    }

    @Test("Enter first, approval later: the long-poll returns as soon as the device answers")
    func approveWhileWaiting() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let started = Date()
        let login = try box.login(try validator.service(box), "root", [validator.device("approve", ["--delay", "2"])])
        let elapsed = Date().timeIntervalSince(started)
        #expect(login.status == PAM.success, "\(login)")
        #expect(elapsed >= 2 && elapsed < 8, "took \(elapsed) s")
        #expect(try validator.bodies("/v1/push/wait").count == 1, "one long-poll, no polling loop")
    }

    @Test("Denied on the device: the plain code prompt follows, and a passcode still logs in")
    func deny() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let service = try validator.service(box)
        let login = try box.login(service, "root", [validator.device("deny"), "123456"])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.count == 2 && PushPrompt.isApproval(login.prompts.first) && login.prompts.last == PushPrompt.denied, "\(login)")
        #expect(try validator.requests().map(\.path).last == "/v1/verify")
        let wrong = try box.login(service, "root", [validator.device("deny"), "654321"])
        #expect(wrong.status == PAM.authError, "\(wrong)")
    }

    @Test("Wrong number typed on the device (the validator relays it anyway): refused by the host, then the passcode prompt")
    func wrongNumber() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let login = try box.login(try validator.service(box), "root", [validator.device("approve", ["--wrong-number"]), "000000"])
        #expect(login.status == PAM.authError, "\(login)")
        #expect(login.prompts.last == PushPrompt.refused, "\(login)")
        let result = try #require(try validator.bodies("/v1/push/result").first)
        #expect(result["accepted"] as? Bool == false && result["reason"] as? String == "wrong_challenge", "\(result)")
    }

    @Test("An earlier login's approval handed to a new request (replay): refused, then the passcode prompt")
    func replay() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let service = try validator.service(box)
        let first = try box.login(service, "root", [validator.device("approve")])
        #expect(first.status == PAM.success, "\(first)")
        let replayed = try box.login(service, "root", [validator.device("approve", ["--replay"]), "123456"])
        #expect(replayed.status == PAM.success, "the passcode after the refusal: \(replayed)")
        #expect(replayed.prompts.last == PushPrompt.refused, "\(replayed)")
        let results = try validator.bodies("/v1/push/result")
        #expect(results.count == 2 && results.last?["accepted"] as? Bool == false && results.last?["reason"] as? String == "wrong_challenge", "\(results)")
    }

    @Test("The validator failed the request: the user is told why — a refused approval (a replay, a bad signature) is not a wrong number",
          arguments: [("approval_refused", PushPrompt.refused), ("", PushPrompt.refused), ("wrong_number", PushPrompt.wrongNumbers)])
    func failedSaysWhy(_ reason: String, _ told: String) throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, ["--fail-reason", reason])
        let login = try box.login(try validator.service(box), "root", [validator.device("fail"), "123456"])
        #expect(login.status == PAM.success, "the passcode after it: \(login)")
        #expect(login.prompts.count == 2 && login.prompts.last == told, "\(reason): \(login)")
    }

    @Test("A wrong number typed on the device is told at once, and the same request asked again; the right number then logs in")
    func wrongNumberToldAtOnce() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let started = Date()
        let login = try box.login(try validator.service(box, ["push_timeout=20"]), "root", [validator.device("wrong"), validator.device("approve")])
        let elapsed = Date().timeIntervalSince(started)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.count == 2 && PushPrompt.isApproval(login.prompts.first), "\(login)")
        let again = try #require(login.prompts.last)
        #expect(again.hasPrefix("Wrong number typed on your device. ") && PushPrompt.isApproval(String(again.dropFirst("Wrong number typed on your device. ".count))),
                "\(login)")
        #expect(login.prompts.first.map { again.hasSuffix($0) } == true, "the same number, the same request: \(login)")
        #expect(elapsed < 10, "told at once, not after push_timeout=20: \(elapsed) s")
        #expect(try validator.bodies("/v1/push").count == 1, "one request")
        let waits = try validator.bodies("/v1/push/wait")
        #expect(waits.first?["wrong_numbers"] as? Int == 0, "\(waits)")
    }

    @Test("The request expires unanswered: the passcode prompt within the request's lifetime plus a margin")
    func expiry() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box, ["--lifetime", "3"])
        let started = Date()
        let login = try box.login(try validator.service(box), "root", [validator.device("none"), "123456"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.last == PushPrompt.expired, "\(login)")
        #expect(elapsed >= 2 && elapsed < 8, "took \(elapsed) s")
    }

    @Test("The device never answers: push_timeout ends the wait (the request is cancelled), then the passcode prompt")
    func pushTimeout() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let started = Date()
        let login = try box.login(try validator.service(box, ["push_timeout=5"]), "root", [validator.device("none"), "123456"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.last == PushPrompt.expired, "\(login)")
        #expect(elapsed >= 4 && elapsed < 10, "push_timeout=5 took \(elapsed) s")
        #expect(try validator.bodies("/v1/push/cancel").count == 1)
    }

    @Test("A passcode typed at the approval prompt: the request is cancelled and the passcode checked")
    func passcodeInstead() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let service = try validator.service(box)
        let login = try box.login(service, "root", ["123456"])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.count == 1 && PushPrompt.isApproval(login.prompts.first), "\(login)")
        #expect(try validator.requests().map(\.path) == ["/v1/preflight", "/v1/push", "/v1/push/cancel", "/v1/verify"])
        let pushID = try #require(try validator.bodies("/v1/push/cancel").first?["id"] as? String)
        #expect(pushID.hasPrefix("pr") && pushID.count == 34)
        #expect(try validator.bodies("/v1/verify").first?["passcode"] as? String == "123456")
        let wrong = try box.login(service, "root", ["654321"])
        #expect(wrong.status == PAM.authError, "\(wrong)")
    }

    @Test("device_ca: a device certified by the admin's CA is accepted; another CA's certificate or none is refused", arguments: [
        ("valid", nil), ("other-ca", "certificate_invalid"), ("none", "certificate_missing"),
    ])
    func deviceCA(_ certificate: String, _ refusal: String?) throws {
        try Self.deviceCA(certificate, refusal)
    }

    @Test("device_ca: an expired certificate is refused on the host's clock; one without an expiry is taken with a warning, or refused with device_cert_expiry=required",
          arguments: [
        ("expired", [], "certificate_expired"), ("v1", [], nil), ("v1", ["device_cert_expiry=required"], "certificate_no_expiry"),
        ("valid", ["device_cert_expiry=required"], nil),
    ])
    func certificateExpiry(_ certificate: String, _ more: [String], _ refusal: String?) throws {
        let box = try Sandbox()
        let syslog = SyslogCapture.available ? try SyslogCapture(box) : nil
        try Self.deviceCA(certificate, refusal, more, box: box, syslog: syslog)
        if let lines = syslog?.lines() {
            let warned = lines.contains { $0.contains("SOTP-M142") && $0.contains("certificate without an expiry") }
            #expect(warned == (certificate == "v1" && refusal == nil), "\(lines)")
        }
    }

    @Test("device_revoked: a device on the admin's list is refused whatever the validator says, certified or not; an unusable list offers no push")
    func revokedDevice() throws {
        let box = try Sandbox()
        let list = box.path("device-revoked")
        try box.write("# removed 2026-11-27\ndv0123456789abcdef   # alice's old phone\n\n", to: list, mode: 0o644)
        try Self.deviceCA("valid", "device_revoked", ["device_revoked=" + list], box: box)
        let validator = try PushValidator(box)
        let without = try box.login(try validator.service(box, ["device_revoked=" + list]), "root", [validator.device("approve"), "000000"])
        #expect(without.status == PAM.authError && without.prompts.last == PushPrompt.refused, "\(without)")
        #expect(try validator.bodies("/v1/push/result").last?["reason"] as? String == "device_revoked")
        // Another device's id only: this one is taken.
        try box.write("dv00000000000000ff\n", to: list, mode: 0o644)
        try Self.deviceCA("valid", nil, ["device_revoked=" + list], box: box)
        // A line that is not a device id, or a file others may write: no push, the code prompt.
        let syslog = SyslogCapture.available ? try SyslogCapture(box) : nil
        for (text, mode) in [("dv0123456789abcdef\nalice\n", 0o644), ("dv00000000000000ff\n", 0o666)] as [(String, mode_t)] {
            try box.write(text, to: list, mode: mode)
            _ = chmod(list, mode)
            let service = try validator.service(box, ["device_revoked=" + list])
            let login = try syslog?.login(box, service, "root", ["123456"]) ?? box.login(service, "root", ["123456"])
            #expect(login.status == PAM.success && login.prompts == [PAM.defaultPrompt], "\(login)")
            if let lines = syslog?.lines() { #expect(lines.contains { $0.contains("SOTP-M141") }, "\(lines)") }
        }
    }

    /// A login approved on a device certified as `certificate` says (fake_validator.py), on a
    /// host with device_ca= and `more`: accepted, or refused for `refusal`.
    static func deviceCA(_ certificate: String, _ refusal: String?, _ more: [String] = [], box given: Sandbox? = nil,
                         syslog: SyslogCapture? = nil) throws {
        let box = try given ?? Sandbox()
        let validator = try PushValidator(box, ["--certificate", certificate])
        let service = try validator.service(box, ["device_ca=" + validator.caPublicKey] + more)
        let answers = [validator.device("approve"), "000000"]
        let login = try syslog?.login(box, service, "root", answers) ?? box.login(service, "root", answers)
        let result = try #require(try validator.bodies("/v1/push/result").first)
        if let refusal {
            #expect(login.status == PAM.authError && login.prompts.last == PushPrompt.refused, "\(login)")
            #expect(result["accepted"] as? Bool == false && result["reason"] as? String == refusal, "\(result)")
        } else {
            #expect(login.status == PAM.success, "\(login)")
            #expect(result["accepted"] as? Bool == true, "\(result)")
        }
    }

    @Test("device_uv=required: an approval without user verification on the device is refused")
    func userVerification() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let service = try validator.service(box, ["device_uv=required"])
        let without = try box.login(service, "root", [validator.device("approve", ["--no-uv"]), "000000"])
        #expect(without.status == PAM.authError && without.prompts.last == PushPrompt.refused, "\(without)")
        #expect(try validator.bodies("/v1/push/result").last?["reason"] as? String == "not_verified")
        let with = try box.login(service, "root", [validator.device("approve")])
        #expect(with.status == PAM.success, "\(with)")
    }

    @Test("The validator refuses the push (409) or offers none: the plain code prompt, no wait")
    func noPush() throws {
        let box = try Sandbox()
        for options in [["--push-refusal", "push_blocked"], ["--push", "no"]] {
            let validator = try PushValidator(box, options)
            let login = try box.login(try validator.service(box), "root", ["123456"])
            #expect(login.status == PAM.success && login.prompts == [PAM.defaultPrompt], "\(options): \(login)")
            #expect(try validator.bodies("/v1/push/wait").isEmpty)
        }
    }

    @Test("forward_pass: no push is offered (its one answer carries the password)")
    func forwardPassNoPush() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let login = try box.login(try validator.service(box, ["forward_pass"]), "root", ["secret123456"])
        #expect(login.status == PAM.success && login.prompts == [PAM.forwardPassPrompt], "\(login)")
        #expect(try validator.bodies("/v1/push").isEmpty)
    }

    @Test("Run as sudo (a copy of pam-check named sudo): the request carries sudo's command line, bounded to 256 bytes")
    func sudoCommand() throws {
        let box = try Sandbox()
        let validator = try PushValidator(box)
        let sudo = box.path("sudo")
        // A copy (the module checks /proc/self/exe, which a link would not change), written
        // close-on-exec: FileManager's copy let forked children keep it busy (ETXTBSY in CI).
        try box.write(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: try Binaries.pamCheck()))), to: sudo, mode: 0o755)
        let service = try validator.service(box)
        let login = try box.login(service, "root", ["123456", String(repeating: "x", count: 400)], pamCheck: sudo)
        #expect(login.status == PAM.success, "\(login)")
        let command = try #require(try validator.bodies("/v1/push").first?["command"] as? String)
        #expect(command.hasPrefix("sudo --confdir "), "\(command)")
        #expect(command.contains(" \(service) root 123456 x"), "\(command)")
        #expect(command.utf8.count <= 256 && command.hasSuffix("…"), "\(command.utf8.count) bytes: \(command)")
    }
}

/// Push approval through the real OpenSSH server, keyboard-interactive: the number must be
/// readable in the prompt ssh shows (OpenSSH holds PAM messages until the next prompt, so a
/// number in a message would come too late). ssh's askpass program plays the user: it reads
/// the number from the prompt it is given, types it into the (stand-in) device, and answers
/// with Enter.
@Suite("Push approval over a real sshd (keyboard-interactive)", .enabled(if: geteuid() == 0, "needs root to run sshd"))
struct PushSSHDTests {
    @Test("ssh: the prompt shows the number; approve on the device, Enter, logged in; denied: the code prompt follows")
    func sshApproval() throws {
        let sshd = try Tools.require("/usr/sbin/sshd", package: "openssh-server")
        let ssh = try Tools.require("/usr/bin/ssh", package: "openssh-client")
        let keygen = try Tools.require("/usr/bin/ssh-keygen", package: "openssh-client")

        let box = try Sandbox()
        let validator = try PushValidator(box)
        let credential = box.path("host.cred")
        try box.write("sotp_h_0123456789abcdef_" + String(repeating: "5a", count: 32) + "\n", to: credential, mode: 0o600)
        let service = "securotp-it-push-sshd-\(UInt32.random(in: 100_000...999_999))"
        let pamFile = "/etc/pam.d/" + service
        try box.write("""
            auth required \(box.module) state_dir=\(box.path("host")) validator=\(validator.url) host_credential=\(credential)
            account required pam_permit.so
            session required pam_permit.so

            """, to: pamFile)
        defer { unlink(pamFile) }

        let hostKey = box.path("host_ed25519")
        #expect(try Run.run(keygen, ["-q", "-t", "ed25519", "-N", "", "-f", hostKey]).status == 0)
        mkdir("/run/sshd", 0o755)
        let port = Int.random(in: 20_000...32_000)
        let config = box.path("sshd_config")
        try box.write("""
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(hostKey)
            PidFile \(box.path("sshd.pid"))
            UsePAM yes
            KbdInteractiveAuthentication yes
            PasswordAuthentication no
            PubkeyAuthentication no
            AuthenticationMethods keyboard-interactive
            PermitRootLogin yes
            StrictModes no

            """, to: config)
        let program = box.path(service)
        try FileManager.default.createSymbolicLink(atPath: program, withDestinationPath: sshd)
        let server = try Run.start(program, ["-D", "-e", "-f", config])
        defer { kill(server.pid, SIGTERM); _ = try? server.wait(timeout: 10) }
        try SSHDTests.waitForListener(port: port, server: server)

        // ssh runs the askpass program for each prompt, the prompt as its argument; it records
        // the prompts and answers the first as the user at the device would, later ones with a code.
        let prompts = box.path("prompts")
        func login(_ decision: String) throws -> ProcessResult {
            let askpass = box.path("askpass-\(decision).sh")
            try box.write("""
                #!/bin/sh
                printf '%s\\n' "$1" >> \(prompts)
                case "$1" in
                  *"Approve on your device"*) PAM_CHECK_PROMPT="$1" exec \(PushValidator.python) \(PushValidator.script) device \(validator.url) \(decision) ;;
                  *) echo 123456 ;;
                esac

                """, to: askpass, mode: 0o755)
            return try Run.run(ssh, ["-p", String(port), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                                     "-o", "PreferredAuthentications=keyboard-interactive", "-o", "PubkeyAuthentication=no",
                                     "-o", "NumberOfPasswordPrompts=1", "-o", "ConnectTimeout=10", "root@127.0.0.1", "echo", "securotp-ssh-ok"],
                               environment: ["SSH_ASKPASS": askpass, "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"])
        }

        let approved = try login("approve")
        #expect(approved.status == 0 && approved.stdout.contains("securotp-ssh-ok"), "\(approved)")
        let shown = try String(contentsOfFile: prompts, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(shown.count == 1 && shown.first.map { PushPrompt.isApproval(String($0.drop { $0 != "A" })) } == true,
                "ssh showed the number in its prompt: \(shown)")
        let push = try #require(try validator.bodies("/v1/push").first)
        #expect(push["service"] as? String == service && push["tty"] as? String == "ssh" && push["remote_address"] as? String == "127.0.0.1",
                "sshd's PAM items travel with the request: \(push)")

        let denied = try login("deny")
        #expect(denied.status == 0 && denied.stdout.contains("securotp-ssh-ok"), "the code after a denial: \(denied)")
        let all = try String(contentsOfFile: prompts, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(all.count == 3 && all.last?.hasSuffix(PushPrompt.denied) == true, "\(all)")
    }
}
