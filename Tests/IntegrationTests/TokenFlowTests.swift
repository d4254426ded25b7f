import Foundation
import Testing

/// Imported tokens logging in through the real module, with codes from independent tools:
/// RSA SecurID (stoken) in each PIN mode with the new-PIN and next-tokencode dialogues,
/// otpauth imports (oathtool), recovery codes, and the admin's resync.
@Suite("Token kinds through libpam: SecurID PIN modes, new PIN, next tokencode, imports, recovery codes")
struct TokenFlowTests {
    /// Token A of Tests/Vectors/securid.json as a CTF v2 string (6 digits, 30 s, PINPad, no password).
    static func ctfA() throws -> String {
        let url = URL(fileURLWithPath: Binaries.packageRoot + "/Tests/Vectors/securid.json")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        guard let exports = json?["exports"] as? [String: Any], let a = exports["A-v2"] as? [String: Any],
              let string = a["string"] as? String else { throw HarnessError("securid.json has no exports.A-v2.string") }
        return string
    }

    /// stoken's tokencode for the CTF token at a Unix time (PIN 0000 = the bare tokencode).
    static func stoken(_ ctf: String, at time: Int64, pin: String = "0000") throws -> String {
        let tool = try Tools.require("/usr/bin/stoken", package: "stoken")
        let result = try Run.run(tool, ["tokencode", "--token=\(ctf)", "--use-time=\(time)", "--pin=\(pin)"])
        let code = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, !code.isEmpty, code.allSatisfy(\.isNumber) else { throw HarnessError("stoken failed:\n\(result)") }
        return code
    }

    /// The start of the current 30-s step. Logins run with a clock that starts just after it
    /// (`Clock.startingAt(step + 1)`, libfaketime): a dialogue fits in the step with no wait
    /// for a fresh one.
    static func stepStart() -> Int64 {
        let now = Int64(Date().timeIntervalSince1970)
        return now - now % 30
    }

    func importA(_ box: Sandbox, user: String = "root") throws -> (ctf: String, serial: String) {
        let ctf = try Self.ctfA()
        let result = try box.cli(["import", user, ctf, "--format", "json"])
        #expect(result.status == 0, "\(result)")
        let tokens = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        let token = try #require(tokens?.first, "\(result)")
        #expect(token["kind"] as? String == "securid")
        #expect(token["digits"] as? Int == 6 && token["period"] as? Int == 30)
        #expect(token["pin_mode"] as? String == "added", "token A adds the PIN into its code")
        return (ctf, try #require(token["serial"] as? String))
    }

    @Test("SecurID PINPad token: new-PIN mode at first login, then passcodes with the PIN added")
    func pinpadNewPINThenLogin() throws {
        let box = try Sandbox()
        let (ctf, _) = try importA(box)
        // window=3: the later logins below use codes of the next steps without waiting for them.
        let service = try box.service("securid", ["deny=0", "window=3", "resync_window=0"])
        let step = Self.stepStart()
        let time = try Clock.startingAt(step + 1)
        // First login: the bare tokencode (PIN 0000) proves the token; a PIN is chosen twice;
        // then a passcode made with it at the next step.
        let login = try box.login(service, "root", [try Self.stoken(ctf, at: step), "2468", "2468", try Self.stoken(ctf, at: step + 30, pin: "2468")], environment: time)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.count == 4 && login.prompts[1].contains("new PIN"), "\(login)")
        // Later: a passcode with the PIN added works; the bare tokencode no longer does.
        let later = try box.login(service, "root", [try Self.stoken(ctf, at: step + 60, pin: "2468")], environment: time)
        #expect(later.status == PAM.success, "\(later)")
        let bare = try box.login(service, "root", [try Self.stoken(ctf, at: step + 90)], environment: time)
        #expect(bare.status == PAM.authError, "\(bare)")
    }

    @Test("SecurID new PIN refused: mismatched entries and a non-numeric PIN for PINPad")
    func newPINRules() throws {
        let box = try Sandbox()
        let (ctf, _) = try importA(box)
        let service = try box.service("securid", ["deny=0"])
        let step = Self.stepStart()
        let time = try Clock.startingAt(step + 1)
        let mismatch = try box.login(service, "root", [try Self.stoken(ctf, at: step - 30), "2468", "2469"], environment: time)
        #expect(mismatch.status == PAM.authError && mismatch.lines.contains { $0.contains("The PINs differ") }, "\(mismatch)")
        let letters = try box.login(service, "root", [try Self.stoken(ctf, at: step), "ab12", "ab12"], environment: time)
        #expect(letters.status == PAM.authError && letters.lines.contains { $0.contains("digits only") }, "\(letters)")
    }

    @Test("SecurID fob style: PIN typed before the tokencode (pin set from standard input)")
    func fobStyle() throws {
        let box = try Sandbox()
        let (ctf, serial) = try importA(box)
        // An admin may run PINPad-capable tokens fob style: clear, require, then set the PIN.
        #expect(try box.cli(["pin", "clear", "root", serial]).status == 0)
        #expect(try box.cli(["pin", "require", "root", serial]).status == 0)
        let set = try Run.run("/bin/sh", ["-c", "printf 'k9x2\\nk9x2\\n' | '\(box.securotp)' --state-dir '\(box.state)' pin set root \(serial)"])
        #expect(set.status == 0, "\(set)")
        let service = try box.service("securid", ["deny=0"])
        let step = Self.stepStart()
        let time = try Clock.startingAt(step + 1)
        let login = try box.login(service, "root", ["k9x2" + (try Self.stoken(ctf, at: step))], environment: time)
        #expect(login.status == PAM.success, "\(login)")
        let wrongPIN = try box.login(service, "root", ["k9x3" + (try Self.stoken(ctf, at: step + 30))], environment: time)
        #expect(wrongPIN.status == PAM.authError, "\(wrongPIN)")
    }

    @Test("SecurID PINless: the tokencode alone; a code 10 steps ahead starts next-tokencode mode")
    func pinlessAndNextTokencode() throws {
        let box = try Sandbox()
        let (ctf, serial) = try importA(box)
        #expect(try box.cli(["pin", "clear", "root", serial]).status == 0)
        let service = try box.service("securid", ["deny=0"])
        let step = Self.stepStart()
        let time = try Clock.startingAt(step + 1)
        let plain = try box.login(service, "root", [try Self.stoken(ctf, at: step)], environment: time)
        #expect(plain.status == PAM.success, "\(plain)")
        // The token's clock runs 10 steps ahead: its code starts the dialogue, the next one ends it.
        let ahead = step + 300
        let resync = try box.login(service, "root", [try Self.stoken(ctf, at: ahead), try Self.stoken(ctf, at: ahead + 30)], environment: time)
        #expect(resync.status == PAM.success, "\(resync)")
        #expect(resync.prompts.count == 2 && resync.prompts[1].contains("Wait for the code"), "\(resync)")
        // The learned drift is used: the drifted token's next code logs in directly.
        let drifted = try box.login(service, "root", [try Self.stoken(ctf, at: ahead + 60)], environment: time)
        #expect(drifted.status == PAM.success && drifted.prompts.count == 1, "\(drifted)")
    }

    @Test("Import: otpauth URIs (several lines) log in with oathtool's codes; a bad line names its number")
    func otpauthImport() throws {
        let box = try Sandbox()
        let uris = """
            # two tokens from an old system
            otpauth://totp/Old:root?secret=JBSWY3DPEHPK3PXP&issuer=Old
            otpauth://hotp/Old:root-hotp?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Old&counter=7
            """
        let file = box.path("tokens.txt")
        try box.write(uris, to: file)
        let result = try box.cli(["import", "root", file])
        #expect(result.status == 0 && result.stdout.contains("Imported 2 tokens"), "\(result)")
        let service = try box.service("otp", ["deny=0"])
        let hotp = try box.login(service, "root", [try Oath.hotp("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", counter: 7)])
        #expect(hotp.status == PAM.success, "\(hotp)")
        let totp = try box.login(service, "root", [try Oath.totp("JBSWY3DPEHPK3PXP")])
        #expect(totp.status == PAM.success, "\(totp)")

        try box.write("otpauth://totp/A:b?secret=JBSWY3DPEHPK3PXP\notpauth://totp/A:c?secret=not-base32!\n", to: file)
        let bad = try box.cli(["import", "root", file])
        #expect(bad.status == 65 && bad.stderrLines.count == 1 && bad.stderr.contains("line 2"), "\(bad)")
        #expect(try box.listTokens("root").count == 2, "a failed import adds nothing")
    }

    @Test("Recovery codes: each works once at the verification prompt")
    func recoveryCodes() throws {
        let box = try Sandbox()
        _ = try box.enroll("root")
        let result = try box.cli(["recovery-codes", "root", "--count", "3", "--format", "json"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let codes = try #require(json?["codes"] as? [String], "\(result)")
        #expect(codes.count == 3)
        let service = try box.service("recovery", ["deny=0"])
        let first = try box.login(service, "root", [codes[0]])
        #expect(first.status == PAM.success && first.infos.contains { $0.contains("2 left") }, "\(first)")
        let again = try box.login(service, "root", [codes[0]])
        #expect(again.status == PAM.authError, "\(again)")
    }

    @Test("securotp resync: two consecutive HOTP codes far ahead move the counter")
    func adminResync() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let result = try box.cli(["resync", "root", token.serial, try Oath.hotp(token.secret, counter: 300), try Oath.hotp(token.secret, counter: 301)])
        #expect(result.status == 0 && result.stdout.contains("next counter 302"), "\(result)")
        let service = try box.service("resync", ["deny=0", "resync_window=0"])
        #expect(try box.login(service, "root", [try Oath.hotp(token.secret, counter: 301)]).status == PAM.authError)
        #expect(try box.login(service, "root", [try Oath.hotp(token.secret, counter: 302)]).status == PAM.success)
    }
}

extension TokenFlowTests {
    @Test("OCRA: the prompt shows a fresh challenge; PyPI oath's response to it logs in, once", arguments: [
        "OCRA-1:HOTP-SHA1-6:QN08", "OCRA-1:HOTP-SHA256-8:C-QN08", "OCRA-1:HOTP-SHA512-8:QA10-T1M",
    ])
    func ocraChallengeResponse(suite: String) throws {
        let box = try Sandbox()
        let result = try box.cli(["enroll", "root", "--ocra", suite, "--format", "json"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let key = try #require(json?["key_hex"] as? String, "\(result)")
        let script = try Self.ocraOracle(box, suite: suite, keyHex: key)
        let service = try box.service("ocra", ["deny=0"])
        let login = try box.login(service, "root", [script])
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts.first?.hasPrefix("Challenge ") == true, "\(login)")
        // A response to another challenge is refused.
        let stale = try box.login(service, "root", ["!python3 -c 'print(\"12345678\")'"])
        #expect(stale.status == PAM.authError, "\(stale)")
    }

    /// A pam-check answer script: the oracle reads the challenge out of the prompt and answers
    /// with PyPI oath (counter 0 for C suites, now for T suites). Returns the `!python3 …` response.
    static func ocraOracle(_ box: Sandbox, suite: String, keyHex: String) throws -> String {
        let script = box.path("ocra-answer.py")
        try box.write("""
            import os, re, time
            from oath import _ocra
            suite = _ocra.str2ocrasuite("\(suite)")
            challenge = re.search(r"Challenge (\\S+)\\.", os.environ["PAM_CHECK_PROMPT"]).group(1)
            args = {"Q": challenge}
            if "-C-" in "\(suite)" or ":C-" in "\(suite)": args["C"] = 0
            if "-T" in "\(suite)": args["T_precomputed"] = int(time.time()) // 60
            print(suite(bytes.fromhex("\(keyHex)"), **args))
            """, to: script)
        return "!python3 \(script)"
    }
}
