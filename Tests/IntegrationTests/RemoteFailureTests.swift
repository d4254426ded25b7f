// Remote mode when things go wrong: the validator down, hung, or behind the wrong certificate
// (failmode decides), a refused credential (never failmode=safe), a host asking about a user
// it may not see, rate limits, and answers no real validator gives (FakeValidator).
import Foundation
import Glibc
import Testing

@Suite("Remote mode failures: failmode, timeouts, TLS, credentials, scope, hostile answers")
struct RemoteFailureTests {
    @Test("A validator name with an IPv6 address first and a validator listening on IPv4 only: every address is tried")
    func everyAddressOfTheName() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        #expect(validator.boundAddress.hasPrefix("127.0.0.1:"), "\(validator.boundAddress)")
        let port = String(validator.boundAddress.dropFirst("127.0.0.1:".count))
        // dualstack.test resolves to ::1 first, then 127.0.0.1 (nss_wrapper, no /etc/hosts change).
        let hosts = world.box.path("dualstack-hosts")
        try world.box.write("::1 dualstack.test\n127.0.0.1 dualstack.test\n", to: hosts)
        let nss = ["LD_PRELOAD": try Tools.nssWrapper(), "NSS_WRAPPER_HOSTS": hosts]
        let url = "https://dualstack.test:\(port)"
        let service = try world.box.service("dualstack", world.arguments(url), stateDirectory: world.hostState)
        let login = try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)], environment: nss)
        #expect(login.status == PAM.success, "only [::1] was tried: \(login)")
        // The admin CLI goes through the same client: a host credential reaches the validator
        // (and is refused there, 77) instead of failing to connect (69).
        func cli(_ url: String) throws -> ProcessResult {
            try Run.run(world.box.securotp, ["--server", url, "--credential", world.credential, "--ca-file", world.pki.caFile, "list"],
                        environment: nss)
        }
        let reached = try cli(url)
        #expect(reached.status == 77, "securotp --server tried one address: \(reached)")
        // Nothing listens on either address: the error names both.
        let nowhere = try cli("https://dualstack.test:\(try SilentListener.closedPort())")
        #expect(nowhere.status == 69, "\(nowhere)")
        #expect(nowhere.stderr.contains("[::1]") && nowhere.stderr.contains("127.0.0.1"), "the error should name the addresses tried: \(nowhere)")
    }

    @Test("Validator down: failmode=secure denies with PAM_AUTHINFO_UNAVAIL, failmode=safe ignores — both before any prompt")
    func validatorDown() throws {
        let world = try RemoteWorld()
        let url = "https://127.0.0.1:\(try SilentListener.closedPort())"
        let secure = try world.box.login(try world.box.service("secure", world.arguments(url, ["failmode=secure"]), stateDirectory: world.hostState),
                                         "root", ["123456"])
        let safe = try world.box.login(try world.ignoreProbe("safe", world.arguments(url, ["failmode=safe"])), "root", ["123456"])
        #expect(secure.status == PAM.authInfoUnavailable, "\(secure)")
        #expect(secure.prompts.isEmpty, "a broken validator fails before the user types: \(secure)")
        #expect(safe.status == PAM.ignoreProbeExit && safe.infos == [PAM.ignoreProbeInfo], "expected PAM_IGNORE: \(safe)")
        #expect(safe.prompts.isEmpty, "\(safe)")
        // The default is secure.
        let plain = try world.box.service("default", world.arguments(url), stateDirectory: world.hostState)
        #expect(try world.box.login(plain, "root", ["123456"]).status == PAM.authInfoUnavailable)
    }

    @Test("Validator down, failmode=safe with forward_pass: the password is still taken and handed on")
    func safeForwardPass() throws {
        let world = try RemoteWorld()
        let url = "https://127.0.0.1:\(try SilentListener.closedPort())"
        let capture = world.box.path("authtok")
        let script = world.box.path("capture-authtok.sh")
        try world.box.write("#!/bin/sh\ncat > \"$1\"\n", to: script, mode: 0o755)
        let service = try world.box.service("safe-forward", world.arguments(url, ["failmode=safe", "forward_pass"]),
                                            control: "[success=done ignore=ignore default=die]", stateDirectory: world.hostState,
                                            then: ["auth required pam_exec.so expose_authtok quiet /bin/sh \(script) \(capture)"])
        let login = try world.box.login(service, "root", ["hunter2" + "123456"])
        #expect(login.status == PAM.success, "pam_exec ends the stack with success after the ignored factor: \(login)")
        #expect(login.prompts == [PAM.forwardPassPrompt], "\(login)")
        #expect(try String(contentsOfFile: capture, encoding: .utf8).filter { $0 != "\0" && $0 != "\n" } == "hunter2")
    }

    @Test("A validator that accepts connections and never answers: the login ends within timeout= plus a margin")
    func slowValidator() throws {
        let world = try RemoteWorld()
        let listener = try SilentListener()
        let service = try world.box.service("slow", world.arguments("https://127.0.0.1:\(listener.port)", ["timeout=2"]), stateDirectory: world.hostState)
        let started = Date()
        let login = try world.box.login(service, "root", ["123456"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(login.status == PAM.authInfoUnavailable && login.prompts.isEmpty, "\(login)")
        #expect(elapsed >= 1.9 && elapsed < 6, "timeout=2 took \(elapsed) s")
    }

    @Test("TLS refused: a CA that did not sign the validator's certificate, or a certificate for another name — failmode")
    func wrongCertificate() throws {
        let world = try RemoteWorld()
        _ = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let wrongCA = try world.box.service("wrong-ca", world.arguments(validator.url, caFile: world.pki.otherCAFile), stateDirectory: world.hostState)
        let refused = try world.box.login(wrongCA, "root", ["123456"])
        #expect(refused.status == PAM.authInfoUnavailable && refused.prompts.isEmpty, "\(refused)")
        let safe = try world.box.login(try world.ignoreProbe("wrong-ca-safe", world.arguments(validator.url, caFile: world.pki.otherCAFile, ["failmode=safe"])),
                                       "root", ["123456"])
        #expect(safe.status == PAM.ignoreProbeExit && safe.prompts.isEmpty, "\(safe)")

        let misnamed = try world.start(certificate: (world.pki.wrongNameCertificate, world.pki.wrongNameKey))
        let otherName = try world.box.service("wrong-name", world.arguments(misnamed.url), stateDirectory: world.hostState)
        let mismatch = try world.box.login(otherName, "root", ["123456"])
        #expect(mismatch.status == PAM.authInfoUnavailable && mismatch.prompts.isEmpty, "\(mismatch)")
    }

    @Test("A revoked host credential denies with PAM_AUTHINFO_UNAVAIL even with failmode=safe")
    func revokedCredential() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let safe = try world.box.service("revoked", world.arguments(validator.url, ["failmode=safe"]),
                                         control: "[success=done ignore=ignore default=die]", stateDirectory: world.hostState,
                                         then: ["auth requisite pam_debug.so auth=maxtries"])
        let before = try world.box.login(safe, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(before.status == PAM.success, "\(before)")

        let revoke = try world.cli(["host", "revoke", "web1"])
        #expect(revoke.status == 0, "\(revoke)")
        let after = try world.box.login(safe, "root", [try Oath.hotp(token.secret, counter: 1)])
        #expect(after.status == PAM.authInfoUnavailable, "a revoked credential must not open the door: \(after)")
        #expect(after.prompts.isEmpty, "\(after)")
    }

    @Test("A wrong, malformed or unprotected credential file: PAM_AUTHINFO_UNAVAIL even with failmode=safe")
    func badCredentialFiles() throws {
        let world = try RemoteWorld()
        _ = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let unknown = world.box.path("unknown.cred")
        try world.box.write("sotp_h_0123456789abcdef_" + String(repeating: "ab", count: 32) + "\n", to: unknown, mode: 0o600)
        let malformed = world.box.path("malformed.cred")
        try world.box.write("not a credential\n", to: malformed, mode: 0o600)
        let readable = world.box.path("readable.cred")
        try world.box.write(try String(contentsOfFile: world.credential, encoding: .utf8), to: readable, mode: 0o644)
        for (name, file) in [("unknown", unknown), ("malformed", malformed), ("readable", readable), ("missing", world.box.path("nope.cred"))] {
            let service = try world.ignoreProbe("cred-" + name, world.arguments(validator.url, credential: file, ["failmode=safe"]))
            let login = try world.box.login(service, "root", ["123456"])
            #expect(login.status == PAM.authInfoUnavailable && login.prompts.isEmpty, "\(name) credential: \(login)")
        }
    }

    @Test("A host limited to some users asking about another: prompted, then denied; its own users work")
    func hostScope() throws {
        let world = try RemoteWorld(hostUsers: "root")
        let token = try world.enroll("root", ["--hotp"])
        _ = try world.enroll("securotp-it-alice", ["--hotp"])
        let validator = try world.start()
        let service = try world.service("scoped", validator, ["failmode=safe"])
        let other = try world.box.login(service, "securotp-it-alice", ["123456"])
        #expect(other.status == PAM.authError, "\(other)")
        #expect(other.prompts == [PAM.defaultPrompt], "prompted like an enrolled user (AttackReviewTests): \(other)")
        let own = try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(own.status == PAM.success, "\(own)")
    }

    @Test("Rate-limited by the validator (429): denied, and the code offered was not spent")
    func rateLimited() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start(["rate_limit_user": "1"])
        let service = try world.service("limited", validator, ["failmode=safe"])
        let wrong = try Oath.wrongHOTP(token.secret)
        let first = try world.box.login(service, "root", [wrong])
        #expect(first.status == PAM.authError, "\(first)")
        let limited = try world.box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(limited.status == PAM.authError, "the second verification within a minute is over rate_limit_user=1: \(limited)")
        #expect(try world.box.listTokens("root", stateDirectory: world.validatorState).first?["counter"] as? Int == 0, "the code was not checked")
    }
}

@Suite("Remote mode against a scripted validator: what is sent, and answers no real validator gives")
struct RemoteProtocolTests {
    /// A service asking `fake`; by default PAM_IGNORE is observable (Sandbox.ignoreProbe).
    private func service(_ box: Sandbox, _ fake: FakeValidator, _ more: [String] = [], control: String = "[success=done ignore=ignore default=die]",
                         then extra: [String] = ["auth requisite pam_debug.so auth=maxtries"]) throws -> String {
        let credential = box.path("host.cred")
        if !FileManager.default.fileExists(atPath: credential) {
            try box.write("sotp_h_0123456789abcdef_" + String(repeating: "5a", count: 32) + "\n", to: credential, mode: 0o600)
        }
        return try box.service("fake-\(UUID().uuidString.prefix(6).lowercased())", ["validator=" + fake.url, "host_credential=" + credential] + more,
                               control: control, stateDirectory: box.path("host"), then: extra)
    }

    @Test("forward_pass sends only the trailing code, never the password; requests carry the credential and valid JSON")
    func forwardPassSendsOnlyTheCode() throws {
        let box = try Sandbox()
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [.json(#"{"has_tokens":true,"code_digits":[6,8]}"#)], "/v1/verify": [.accept]])
        let capture = box.path("authtok")
        let script = box.path("capture.sh")
        try box.write("#!/bin/sh\ncat > \"$1\"\n", to: script, mode: 0o755)
        let name = try service(box, fake, ["forward_pass"], control: "required", then: ["auth required pam_exec.so expose_authtok quiet /bin/sh \(script) \(capture)"])
        let login = try box.login(name, "root", ["correct horse 42" + "12345678"])
        #expect(login.status == PAM.success, "\(login)")
        let requests = try fake.requests()
        #expect(requests.map(\.path) == ["/v1/preflight", "/v1/verify"], "\(requests)")
        let credential = try String(contentsOfFile: box.path("host.cred"), encoding: .utf8).trimmingCharacters(in: .newlines)
        for request in requests {
            #expect(request.authorization == "Bearer " + credential)
            #expect(request.contentType == "application/json")
            #expect(request.json != nil, "not JSON: \(request.body)")
            #expect(!request.body.contains("horse") && !request.body.contains("42"), "the password left the host: \(request.body)")
        }
        let verify = try #require(requests.last?.json)
        #expect(verify["passcode"] as? String == "12345678", "the longest code length of the user's tokens: \(verify)")
        #expect(verify["code_at_end"] as? Bool == true && verify["user"] as? String == "root", "\(verify)")
        // The validator said the code was 6 digits: the password handed on is the rest.
        #expect(try String(contentsOfFile: capture, encoding: .utf8).filter { $0 != "\0" && $0 != "\n" } == "correct horse 4212")
    }

    @Test("User names and passcodes are escaped: quotes, backslashes and control characters arrive intact")
    func escaping() throws {
        let box = try Sandbox()
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [.hasTokens], "/v1/verify": [.reject]])
        let name = try service(box, fake)
        let user = #"securotp-it-"quoted\name"#
        let passcode = "a\"b\\c\td\u{1}é"
        let login = try box.login(name, user, [passcode])
        #expect(login.status == PAM.authError, "\(login)")
        let requests = try fake.requests()
        #expect(requests.count == 2, "\(requests)")
        #expect(requests.first?.json?["user"] as? String == user, "\(requests)")
        #expect(requests.last?.json?["passcode"] as? String == passcode, "\(requests)")
    }

    @Test("5xx, an unreadable answer or a redirect: failmode (secure denies, safe ignores)", arguments: [
        FakeValidator.Answer.error(500, "internal"), .error(503, "unavailable"), .json("<html>not json</html>"), .json("[1,2,3]"),
        .json(#"{"has_tokens":"yes","code_digits":[6]}"#), .json("", status: 302),
    ])
    func unavailableAnswers(_ answer: FakeValidator.Answer) throws {
        let box = try Sandbox()
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [answer]])
        let secure = try box.login(try service(box, fake), "root", ["123456"])
        #expect(secure.status == PAM.authInfoUnavailable && secure.prompts.isEmpty, "\(answer): \(secure)")
        let safe = try box.login(try service(box, fake, ["failmode=safe"]), "root", ["123456"])
        #expect(safe.status == PAM.ignoreProbeExit && safe.prompts.isEmpty, "\(answer): \(safe)")
    }

    @Test("Refusals a request can provoke are never failmode=safe: 400 and 403 deny, 401 is PAM_AUTHINFO_UNAVAIL")
    func refusalsNeverFailOpen() throws {
        let box = try Sandbox()
        let cases: [(FakeValidator.Answer, Int32)] = [(.error(400, "invalid_input"), PAM.authError), (.error(403, "forbidden"), PAM.authError),
                                                      (.error(401, "unauthorized"), PAM.authInfoUnavailable), (.error(429, "rate_limited"), PAM.authError)]
        for (answer, expected) in cases {
            let fake = try FakeValidator(box, answers: ["/v1/preflight": [.hasTokens], "/v1/verify": [answer]])
            let login = try box.login(try service(box, fake, ["failmode=safe"]), "root", ["123456"])
            #expect(login.status == expected, "HTTP \(answer.status) after the prompt: \(login)")
            #expect(login.prompts == [PAM.defaultPrompt], "\(login)")
        }
    }

    @Test("A challenge prompt with a terminal escape sequence is refused, never shown")
    func hostilePrompt() throws {
        let box = try Sandbox()
        let challenge = #"{"result":"challenge","serial":"1","challenge":{"id":"abc","kind":"next_code","prompt":"\u001b]2;owned\u0007Next: ","expires_in":180}}"#
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [.hasTokens], "/v1/verify": [.json(challenge)]])
        let login = try box.login(try service(box, fake), "root", ["123456", "654321"])
        #expect(login.status == PAM.authInfoUnavailable, "\(login)")
        #expect(login.prompts == [PAM.defaultPrompt], "\(login)")
        #expect(!login.stdout.contains("owned"), "\(login)")
    }

    @Test("Bidi controls from a validator (a prompt, an info or error line) are refused, never shown", arguments: [
        #"{"result":"challenge","serial":"1","challenge":{"id":"abc","kind":"next_code","prompt":"Next code: \u202etxt.exe ","expires_in":180}}"#,
        #"{"result":"accept","serial":"1","info":"Welcome \u2066owned\u2069."}"#,
        #"{"result":"reject","serial":"1","error":"Refused \u200fowned."}"#,
    ])
    func bidiFromTheValidator(_ answer: String) throws {
        let box = try Sandbox()
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [.hasTokens], "/v1/verify": [.json(answer)]])
        let login = try box.login(try service(box, fake), "root", ["123456", "654321"])
        #expect(login.status == PAM.authInfoUnavailable, "an unreadable answer: \(login)")
        #expect(login.prompts == [PAM.defaultPrompt], "\(login)")
        #expect(!login.stdout.unicodeScalars.contains { [0x202e, 0x2066, 0x2069, 0x200f].contains($0.value) } && !login.stdout.contains("owned"), "\(login)")
    }

    @Test("A validator that never stops asking: the dialogue ends after a bounded number of answers")
    func endlessChallenges() throws {
        let box = try Sandbox()
        let challenge = #"{"result":"challenge","serial":"1","challenge":{"id":"abc","kind":"next_code","prompt":"Next code: ","expires_in":180}}"#
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [.hasTokens], "/v1/verify": [.json(challenge)], "/v1/verify/answer": [.json(challenge)]])
        let login = try box.login(try service(box, fake), "root", Array(repeating: "123456", count: 20))
        #expect(login.status == PAM.authError, "\(login)")
        #expect(login.prompts.count == 5, "one code and four answers at most: \(login)")
        #expect(try fake.requests().filter { $0.path == "/v1/verify/answer" }.count == 4)
    }

    @Test("Challenge answers name the challenge; a new PIN is sent once after two equal entries")
    func challengeAnswers() throws {
        let box = try Sandbox()
        let newPIN = #"{"result":"challenge","serial":"7","challenge":{"id":"c1","kind":"new_pin","prompt":"Enter a new PIN: ","confirm_prompt":"Again: ","expires_in":180}}"#
        let passcode = #"{"result":"challenge","serial":"7","challenge":{"id":"c2","kind":"passcode","prompt":"PIN set. Passcode: ","expires_in":180}}"#
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [.hasTokens], "/v1/verify": [.json(newPIN)],
                                                    "/v1/verify/answer": [.json(passcode), .json(#"{"result":"accept","serial":"7","info":"Welcome."}"#)]])
        let login = try box.login(try service(box, fake), "root", ["111111", "9876", "9876", "9876222222"])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts == [PAM.defaultPrompt, "Enter a new PIN: ", "Again: ", "PIN set. Passcode: "], "\(login)")
        #expect(login.infos == ["Welcome."], "\(login)")
        let answers = try fake.requests().filter { $0.path == "/v1/verify/answer" }.compactMap(\.json)
        #expect(answers.map { $0["challenge_id"] as? String } == ["c1", "c2"], "\(answers)")
        #expect(answers.map { $0["answer"] as? String } == ["9876", "9876222222"], "\(answers)")
    }
}
