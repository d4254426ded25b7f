// Remote mode end to end: the real module, loaded by the real libpam, asks a real securotpd
// (release binary) over TLS with a test CA; codes come from oathtool, stoken and PyPI oath.
import Foundation
import Testing

@Suite("Remote mode: pam_securotp.so against securotpd over TLS")
struct RemoteLoginTests {
    @Test("TOTP: a wrong code is refused, the right one accepted, its replay refused with the replay message")
    func rightWrongReplay() async throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root")
        let validator = try world.start()
        let service = try world.service("remote", validator)

        try await Clock.waitForFreshStep()
        let wrong = try world.box.login(service, "root", [try Oath.wrongTOTP(token.secret)])
        #expect(wrong.status == PAM.authError, "\(wrong)")
        #expect(wrong.prompts == [PAM.defaultPrompt] && wrong.infos.isEmpty, "\(wrong)")

        let code = try Oath.totp(token.secret)
        let right = try world.box.login(service, "root", [code])
        #expect(right.status == PAM.success, "\(right)")
        #expect(right.prompts == [PAM.defaultPrompt], "\(right)")

        let replay = try world.box.login(service, "root", [code])
        #expect(replay.status == PAM.authError, "\(replay)")
        #expect(replay.infos == [PAM.replayInfo], "\(replay)")
        let silent = try world.box.login(service, "root", [code], silent: true)
        #expect(silent.status == PAM.authError && silent.infos.isEmpty, "PAM_SILENT silences the validator's info too: \(silent)")
    }

    @Test("Lockout decided by the validator (deny=3): the right code is refused until securotp unlock there")
    func lockout() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start(["deny": "3", "unlock_time": "0"])
        let service = try world.service("locking", validator)
        let wrong = try Oath.wrongHOTP(token.secret)
        let right = try Oath.hotp(token.secret, counter: 0)

        for attempt in 1...3 {
            let failed = try world.box.login(service, "root", [wrong])
            #expect(failed.status == PAM.authError, "attempt \(attempt): \(failed)")
        }
        let locked = try world.box.login(service, "root", [right])
        #expect(locked.status == PAM.authError, "the right code got through the validator's lock: \(locked)")
        #expect(locked.prompts == [PAM.defaultPrompt], "a locked user is prompted like anyone else: \(locked)")
        #expect(try world.box.listTokens("root", stateDirectory: world.validatorState).first?["user_locked"] as? Bool == true)

        let unlock = try world.cli(["unlock", "root"])
        #expect(unlock.status == 0, "\(unlock)")
        let after = try world.box.login(service, "root", [right])
        #expect(after.status == PAM.success, "the code offered while locked was never checked: \(after)")
    }

    @Test("nullok: a known user without a token is ignored without a prompt; without nullok prompted and refused")
    func nullok() throws {
        let world = try RemoteWorld()
        _ = try world.enroll("securotp-it-alice", ["--hotp"]) // the validator's store exists; root has no token
        let validator = try world.start()
        let probe = try world.ignoreProbe("nullok", world.arguments(validator.url, ["nullok"]))
        let ignored = try world.box.login(probe, "root", ["123456"])
        #expect(ignored.status == PAM.ignoreProbeExit && ignored.infos == [PAM.ignoreProbeInfo], "expected PAM_IGNORE: \(ignored)")
        #expect(ignored.prompts.isEmpty, "\(ignored)")

        let strict = try world.service("strict", validator)
        let refused = try world.box.login(strict, "root", ["123456"])
        #expect(refused.status == PAM.authError && refused.prompts == [PAM.defaultPrompt], "\(refused)")

        // nullok never lets a user NSS does not know through, whatever the validator says.
        let unknown = try world.box.login(probe, StackTests.unknownUser, ["123456"])
        #expect(unknown.status == PAM.authError && unknown.prompts == [PAM.defaultPrompt], "\(unknown)")
    }

    @Test("An unknown user sees exactly what a known user with a wrong code sees")
    func unknownUser() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let service = try world.service("enum", validator)
        let wrong = try Oath.wrongHOTP(token.secret)
        let known = try world.box.login(service, "root", [wrong])
        let unknown = try world.box.login(service, StackTests.unknownUser, [wrong])
        let invalid = try world.box.login(service, "-not a name", [wrong])
        #expect(known.status == PAM.authError && unknown.status == PAM.authError && invalid.status == PAM.authError)
        #expect(unknown.stdout == known.stdout, "the conversation tells them apart:\n\(known)\n\(unknown)")
        #expect(invalid.stdout == known.stdout, "\(invalid)")
        // Root's code does not open another account, and trying it does not spend it.
        let borrowed = try world.box.login(service, StackTests.unknownUser, [try Oath.hotp(token.secret, counter: 0)])
        #expect(borrowed.status == PAM.authError, "\(borrowed)")
        #expect(try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)]).status == PAM.success)
    }

    @Test("forward_pass: password+code in one answer; the password goes on as PAM_AUTHTOK")
    func forwardPass() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let capture = world.box.path("authtok")
        let script = world.box.path("capture-authtok.sh")
        try world.box.write("#!/bin/sh\ncat > \"$1\"\n", to: script, mode: 0o755)
        let service = try world.service("forward", validator, ["forward_pass"],
                                        then: ["auth required pam_exec.so expose_authtok quiet /bin/sh \(script) \(capture)"])
        func forwarded() throws -> String { try String(contentsOfFile: capture, encoding: .utf8).filter { $0 != "\0" && $0 != "\n" } }

        let accepted = try world.box.login(service, "root", ["hunter2" + (try Oath.hotp(token.secret, counter: 0))])
        #expect(accepted.status == PAM.success, "\(accepted)")
        #expect(accepted.prompts == [PAM.forwardPassPrompt], "\(accepted)")
        #expect(try forwarded() == "hunter2")
        let codeOnly = try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 1)])
        #expect(codeOnly.status == PAM.success, "\(codeOnly)")
        let wrong = try world.box.login(service, "root", ["pass word" + (try Oath.wrongHOTP(token.secret))])
        #expect(wrong.status == PAM.authError, "\(wrong)")
        #expect(try forwarded() == "pass word", "a wrong code still hands the password on")
    }

    @Test("HOTP code beyond the look-ahead: the validator's next-code challenge, answered through the module")
    func nextCodeChallenge() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let service = try world.service("resync", validator)
        let pair = try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 20), try Oath.hotp(token.secret, counter: 21)])
        #expect(pair.status == PAM.success, "\(pair)")
        #expect(pair.prompts == [PAM.defaultPrompt, "Wait for the code on your token to change, then enter the new code: "], "\(pair)")
        #expect(try world.box.listTokens("root", stateDirectory: world.validatorState).first?["counter"] as? Int == 22)
        let notNext = try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 40), try Oath.hotp(token.secret, counter: 42)])
        #expect(notNext.status == PAM.authError && notNext.prompts.count == 2, "40 then 42 is no consecutive pair: \(notNext)")
    }

    @Test("SecurID PINPad token: the new-PIN dialogue through the validator — differing entries, PIN rules, then a new PIN")
    func newPINChallenge() throws {
        let world = try RemoteWorld()
        let ctf = try TokenFlowTests.ctfA()
        let imported = try world.cli(["import", "root", ctf])
        try #require(imported.status == 0, "\(imported)")
        // window=3: the later answers use codes of the next steps without waiting for them.
        let validator = try world.start(["deny": "0", "window": "3", "resync_window": "0"])
        let service = try world.service("securid", validator)
        let step = TokenFlowTests.stepStart()

        // Entries that differ end the login here; the validator is not told.
        let mismatch = try world.box.login(service, "root", [try TokenFlowTests.stoken(ctf, at: step - 30), "2468", "2469"])
        #expect(mismatch.status == PAM.authError && mismatch.errors == ["The PINs differ. Log in again to set your PIN."], "\(mismatch)")
        #expect(mismatch.prompts.count == 3 && mismatch.prompts[1].contains("new PIN"), "\(mismatch)")
        // The validator's PIN rules: a PINPad PIN has digits only.
        let letters = try world.box.login(service, "root", [try TokenFlowTests.stoken(ctf, at: step), "ab12", "ab12"])
        #expect(letters.status == PAM.authError && letters.errors.contains { $0.contains("digits only") }, "\(letters)")
        // A good PIN, then a passcode made with it.
        let login = try world.box.login(service, "root", [try TokenFlowTests.stoken(ctf, at: step + 30), "2468", "2468",
                                                          try TokenFlowTests.stoken(ctf, at: step + 60, pin: "2468")])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.count == 4 && login.prompts[3].hasPrefix("PIN set."), "\(login)")
        let later = try world.box.login(service, "root", [try TokenFlowTests.stoken(ctf, at: step + 90, pin: "2468")])
        #expect(later.status == PAM.success, "\(later)")
    }

    @Test("OCRA: the module shows a fresh challenge and sends it with the response", arguments: ["OCRA-1:HOTP-SHA1-6:QN08", "OCRA-1:HOTP-SHA512-8:QA10-T1M"])
    func ocra(suite: String) throws {
        let world = try RemoteWorld()
        let result = try world.cli(["enroll", "root", "--ocra", suite, "--format", "json"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let key = try #require(json?["key_hex"] as? String, "\(result)")
        let validator = try world.start(["deny": "0"])
        let service = try world.service("ocra", validator)
        let login = try world.box.login(service, "root", [try TokenFlowTests.ocraOracle(world.box, suite: suite, keyHex: key)])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.first?.hasPrefix("Challenge ") == true, "\(login)")
        let stale = try world.box.login(service, "root", ["!python3 -c 'print(\"12345678\")'"])
        #expect(stale.status == PAM.authError, "\(stale)")
    }

    @Test("try_first_pass and use_first_pass behave as in local mode")
    func firstPass() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let codes = try (0...12).map { try Oath.hotp(token.secret, counter: UInt64($0)) }
        let wrong = try Oath.wrongHOTP(token.secret)
        func stacked(_ name: String, _ option: String) throws -> String {
            let provider = "auth required pam_exec.so expose_authtok quiet /bin/true"
            let line = (["auth", "required", world.box.module, "state_dir=" + world.hostState] + world.arguments(validator.url, [option])).joined(separator: " ")
            try world.box.write(provider + "\n" + line + "\n", to: world.box.pamDirectory + "/" + name)
            return name
        }
        let trying = try stacked("try", "try_first_pass")
        let prompted = try world.box.login(trying, "root", [wrong, codes[0]])
        #expect(prompted.status == PAM.success && prompted.prompts == [PAM.firstPassPrompt, PAM.defaultPrompt], "\(prompted)")
        let direct = try world.box.login(trying, "root", [codes[1]])
        #expect(direct.status == PAM.success && direct.prompts == [PAM.firstPassPrompt], "\(direct)")

        let using = try stacked("use", "use_first_pass")
        let refused = try world.box.login(using, "root", [wrong, codes[2]])
        #expect(refused.status == PAM.authError && refused.prompts == [PAM.firstPassPrompt], "\(refused)")
        let accepted = try world.box.login(using, "root", [codes[2]])
        #expect(accepted.status == PAM.success, "\(accepted)")
        let alone = try world.service("use-alone", validator, ["use_first_pass"])
        let noAuthtok = try world.box.login(alone, "root", [codes[3]])
        #expect(noAuthtok.status == PAM.authError && noAuthtok.prompts.isEmpty, "\(noAuthtok)")
    }

    @Test("Mutual TLS: with client_cert/client_key the validator answers; without, the TLS handshake fails (failmode)")
    func mutualTLS() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start(clientCA: world.pki.caFile)
        let withCertificate = try world.service("mtls", validator, ["client_cert=" + world.pki.clientCertificate, "client_key=" + world.pki.clientKey])
        let accepted = try world.box.login(withCertificate, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(accepted.status == PAM.success, "\(accepted)")
        let without = try world.service("no-mtls", validator)
        let refused = try world.box.login(without, "root", [try Oath.hotp(token.secret, counter: 1)])
        #expect(refused.status == PAM.authInfoUnavailable && refused.prompts.isEmpty, "\(refused)")
    }

    @Test("validator=unix:/PATH: plain HTTP over the validator's Unix socket")
    func unixSocket() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let socket = world.box.path("securotpd.sock")
        let validator = try Validator(world.box, state: world.validatorState, pki: nil, listen: "unix:" + socket)
        #expect(validator.url == "unix:" + socket)
        let service = try world.box.service("unix", ["validator=unix:" + socket, "host_credential=" + world.credential], stateDirectory: world.hostState)
        let login = try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(login.status == PAM.success, "\(login)")
    }

    @Test("No threads left behind: after a remote login the process has as many threads as before; local mode never loads libcurl")
    func noThreadsLeftBehind() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let remote = try world.service("threads", validator)
        let login = try world.box.login(remote, "root", [try Oath.hotp(token.secret, counter: 0)], process: true)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.libcurlLoaded == true, "remote mode works through libcurl: \(login)")
        let before = try #require(login.threadsBefore, "\(login)")
        #expect(login.threadsAfter == before, "threads before pam_start: \(before), after pam_end: \(login.threadsAfter ?? -1)")

        let local = try world.box.service("local", ["deny=0"], stateDirectory: world.validatorState)
        let localLogin = try world.box.login(local, "root", [try Oath.hotp(token.secret, counter: 1)], process: true)
        #expect(localLogin.status == PAM.success, "\(localLogin)")
        #expect(localLogin.libcurlLoaded == false, "local mode loaded libcurl: \(localLogin)")
    }
}
