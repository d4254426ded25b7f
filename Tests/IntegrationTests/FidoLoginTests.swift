// FIDO credentials in local mode, end to end with the software key (docs/fido.md): Debian's
// pamu2fcfg enrolls and pam_securotp logs in; securotp enrolls and Debian's pam_u2f logs in
// with the exported line; a refused touch fails; a restored ("cloned") key is refused, logged
// and its credential disabled; the module does not link libfido2.
import Foundation
import Testing

@Suite("FIDO security keys: pam_securotp with the software key", .serialized)
struct FidoLoginTests {
    static let cue = "Please touch the device."

    /// One login with the key attached, syslog captured when the machine allows it.
    private func login(_ box: Sandbox, _ key: SoftKey, _ service: String, _ user: String, _ responses: [String] = [],
                       syslog: SyslogCapture? = nil) throws -> ProcessResult {
        guard let syslog else { return try key.login(box, service, user, responses) }
        let script = """
            mount -t tmpfs -o mode=755 none /dev && mknod -m 666 /dev/null c 1 3 && ln -s "$1" /dev/log && shift && exec "$@"
            """
        return try Run.start("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", syslog.path,
                                                  box.pamCheck, "--confdir", box.pamDirectory, service, user] + responses,
                             environment: try key.environment()).wait()
    }

    /// pamu2fcfg's line for USER, imported with `securotp import USER LINE`.
    private func importFromPamu2fcfg(_ box: Sandbox, _ key: SoftKey, user: String) throws -> String {
        let made = try key.pamu2fcfg(user)
        try #require(made.status == 0, "\(made)")
        let line = try #require(made.lines.first { $0.hasPrefix(user + ":") }, "\(made)")
        let imported = try box.cli(["import", user, line, "--format", "json"])
        try #require(imported.status == 0, "\(imported)")
        return line
    }

    @Test("Enrolled with Debian's pamu2fcfg, imported: the user logs in by touching the key, no answer typed")
    func pamu2fcfgThenModule() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        _ = try importFromPamu2fcfg(box, key, user: "root")
        let service = try box.service("fido")

        let first = try key.login(box, service, "root")
        #expect(first.status == PAM.success, "\(first)")
        #expect(first.prompts.isEmpty, "no code asked for: \(first)")
        #expect(first.infos == [Self.cue], "\(first)")
        let second = try key.login(box, service, "root")
        #expect(second.status == PAM.success, "the counter rose, so the next login works too: \(second)")

        let refused = try key.refusing().login(box, service, "root")
        #expect(refused.status == PAM.authError, "no touch, no login: \(refused)")
        #expect(refused.prompts.isEmpty, "a FIDO-only user is not asked for a code: \(refused)")

        let stranger = try SoftKey(box, name: "other.state").login(box, service, "root")
        #expect(stranger.status == PAM.authError, "another key holds no credential of the user: \(stranger)")
        let absent = try key.run(box.pamCheck, ["--confdir", box.pamDirectory, service, "root"], extra: ["SOFTFIDO_STATE": ""])
        #expect(absent.status == PAM.authError, "no key attached, no other token: \(absent)")
    }

    @Test("Enrolled with securotp fido enroll: the exported line logs in through Debian's pam_u2f.so, and through pam_securotp")
    func securotpThenPamU2F() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let enrolled = try key.run(box.securotp, ["--state-dir", box.state, "fido", "enroll", user, "--format", "json"])
        try #require(enrolled.status == 0, "\(enrolled)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(enrolled.stdout.utf8)) as? [String: Any], "\(enrolled)")
        #expect(json["type"] as? String == "es256")
        #expect(json["origin"] as? String == SoftFIDO.defaultOrigin)

        let export = try box.cli(["fido", "export", user])
        try #require(export.status == 0, "\(export)")
        let line = try #require(export.lines.first)
        #expect(line == json["line"] as? String)
        let parsed = try U2FCredential.parse(line: line)
        #expect(parsed.user == user && parsed.credentials.count == 1 && parsed.credentials[0].attributes == "+presence", "\(line)")

        let authfile = box.path("u2f_keys")
        try box.write(line + "\n", to: authfile, mode: 0o600)
        try box.write("auth required \(try SoftFIDO.pamU2F()) authfile=\(authfile) cue\n", to: box.pamDirectory + "/u2f")
        let viaU2F = try key.login(box, "u2f", user)
        #expect(viaU2F.status == PAM.success, "pam_u2f accepts the credential securotp made: \(viaU2F)")
        #expect(try key.refusing().login(box, "u2f", user).status == PAM.authError)

        let service = try box.service("fido")
        let viaModule = try key.login(box, service, user)
        #expect(viaModule.status == PAM.success, "\(viaModule)")
    }

    @Test("A restored state file (a cloned key) is refused, logged, and its credential disabled")
    func clonedKeyRefused() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        _ = try importFromPamu2fcfg(box, key, user: "root")
        let service = try box.service("fido")
        let saved = try String(contentsOfFile: key.state, encoding: .utf8)
        #expect(try key.login(box, service, "root").status == PAM.success)

        try box.write(saved, to: key.state, mode: 0o600) // the clone: the counter goes back
        let syslog = SyslogCapture.available ? try SyslogCapture(box) : nil
        let cloned = try login(box, key, service, "root", syslog: syslog)
        #expect(cloned.status == PAM.authError, "\(cloned)")
        if let syslog {
            let lines = syslog.lines()
            #expect(lines.contains { $0.contains("the key was cloned") && $0.contains("credential disabled") }, "\(lines)")
        }
        let list = try box.cli(["fido", "export", "root", "--format", "json"])
        #expect(list.stdout.contains("\"state\":\"cloned\""), "\(list)")

        // Even once the clone's counter passes the stored one, the credential stays disabled.
        for _ in 0..<3 { _ = try key.login(box, service, "root") }
        #expect(try key.login(box, service, "root").status == PAM.authError)
    }

    @Test("PIN credentials: the module finds the key, then asks for the PIN; a wrong one fails; another key is never given it")
    func pinCredential() throws {
        let box = try Sandbox()
        let key = SoftKey(box).withPIN("1234")
        let made = try key.pamu2fcfg("root", ["-N"], pinAnswer: "1234")
        try #require(made.status == 0, "\(made)")
        let line = try #require(made.lines.first { $0.hasPrefix("root:") })
        #expect(try box.cli(["import", "root", line]).status == 0)
        let service = try box.service("fido")
        let right = try key.login(box, service, "root", ["1234"])
        #expect(right.status == PAM.success, "\(right)")
        #expect(right.prompts == ["Please enter the PIN: "], "\(right)")
        let wrong = try key.login(box, service, "root", ["9999"])
        #expect(wrong.status == PAM.authError, "\(wrong)")
        // A probe finds the key first, even a CTAP 2.1 one alone, so the PIN is never given to a
        // key without the credential.
        let before = try key.storedCounter()
        #expect(try key.speakingCTAP21().login(box, service, "root", ["1234"]).status == PAM.success)
        #expect(try key.storedCounter() == before + 2, "the silent probe, then the assertion")
        let stranger = try SoftKey(box, name: "other.state").withPIN("1234").login(box, service, "root", ["1234"])
        #expect(stranger.status == PAM.authError, "\(stranger)")
        #expect(stranger.prompts.isEmpty, "no PIN asked for a key that holds no credential of the user: \(stranger)")
    }

    @Test("Finding the key: a CTAP 2.1 key alone is asked once per login, a 2.0 key probed first; a foreign key of either never holds up the code prompt")
    func findingTheKey() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        _ = try importFromPamu2fcfg(box, key, user: "root")
        let token = try box.enroll("root")
        let service = try box.service("fido")
        for (version, steps) in [(key, UInt32(2)), (key.speakingCTAP21(), UInt32(1))] {
            let before = try key.storedCounter()
            let login = try version.login(box, service, "root")
            #expect(login.status == PAM.success && login.prompts.isEmpty, "\(login)")
            #expect(try key.storedCounter() == before + steps, "CTAP 2.1: \(version.ctap21): \(steps) key signature(s) per login")
        }
        // A foreign key the user would have to touch: a CTAP 2.0 one asks for the touch before it
        // says it holds nothing, so without the probe the login would end there (a refused touch).
        // (A wrong code each time: the point is the prompt, and a right one is good once per step.)
        // A 2.1 key set to alwaysUv refuses the unprobed assertion before it looks for the
        // credential: the probe then decides, as for any other answer that settles nothing.
        let foreignKeys = [SoftKey(box, name: "other.state").refusing(), SoftKey(box, name: "other.state").refusing().speakingCTAP21(),
                           SoftKey(box, name: "other.state").speakingCTAP21().requiringUVAlways()]
        for foreign in foreignKeys {
            let login = try foreign.login(box, service, "root", [try Oath.wrongTOTP(token.secret)])
            #expect(login.prompts == [PAM.defaultPrompt], "CTAP 2.1: \(foreign.ctap21), alwaysUv: \(foreign.alwaysUV): the code prompt follows, no touch asked: \(login)")
            #expect(login.status == PAM.authError, "\(login)")
        }
    }

    @Test("A user with a FIDO credential and a TOTP token gets the code prompt when no key is attached")
    func fallsThroughWithoutKey() async throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        _ = try importFromPamu2fcfg(box, key, user: "root")
        let token = try box.enroll("root")
        let service = try box.service("fido")
        try await Clock.waitForFreshStep()
        let code = try Oath.totp(token.secret)
        let noKey = try key.run(box.pamCheck, ["--confdir", box.pamDirectory, service, "root", code], extra: ["SOFTFIDO_STATE": ""])
        #expect(noKey.status == PAM.success, "\(noKey)")
        #expect(noKey.prompts == [PAM.defaultPrompt], "\(noKey)")
    }

    @Test("libfido2 is not linked: no NEEDED entry, no fido_* symbol to bind; the module names the library it dlopens")
    func libfido2IsLoadedOnlyWhenUsed() throws {
        let module = try Binaries.module()
        let readelf = try Run.run("/usr/bin/readelf", ["-d", module])
        try #require(readelf.status == 0, "\(readelf)")
        #expect(!readelf.lines.contains { $0.contains("(NEEDED)") && ($0.contains("fido") || $0.contains("cbor")) }, "\(readelf.stdout)")
        let nm = try Run.run("/usr/bin/nm", ["-D", "--undefined-only", module])
        #expect(!nm.lines.contains { $0.contains("fido_") }, "\(nm.stdout)")
        let strings = try Run.run("/usr/bin/strings", [module])
        #expect(strings.lines.contains("libfido2.so.1"))
    }
}
