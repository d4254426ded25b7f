// How the module behaves inside a PAM stack: nullok, groups=, unknown users, and the options
// that share an answer with other modules (use_first_pass, try_first_pass, forward_pass).
import Foundation
import Testing

@Suite("Stack options: nullok, groups, unknown users, first_pass, forward_pass")
struct StackTests {
    /// A user name NSS does not know.
    static let unknownUser = "securotp-it-nosuchuser"

    @Test("nullok: a user without a token is ignored; without nullok they are prompted and fail")
    func nullok() throws {
        let box = try Sandbox()
        _ = try box.enroll("securotp-it-alice", ["--hotp"]) // the store exists; root has no token

        let probe = try box.ignoreProbe("nullok", ["nullok"])
        let ignored = try box.login(probe, "root", ["123456"])
        #expect(ignored.status == PAM.ignoreProbeExit && ignored.infos == [PAM.ignoreProbeInfo],
                "expected PAM_IGNORE (falls through to pam_debug): \(ignored)")
        #expect(ignored.prompts.isEmpty, "nullok must not ask a user without a token: \(ignored)")

        // PAM_IGNORE alone never logs anyone in: libpam fails a stack in which every module ignored.
        let alone = try box.service("nullok-alone", ["nullok"])
        let lonely = try box.login(alone, "root", ["123456"])
        #expect(lonely.status == PAM.permissionDenied, "\(lonely)")

        let strict = try box.service("strict")
        let refused = try box.login(strict, "root", ["123456"])
        #expect(refused.status == PAM.authError, "\(refused)")
        #expect(refused.prompts == [PAM.defaultPrompt], "without nullok a user without a token is prompted: \(refused)")

        // With nullok, a user who has a token is still asked.
        let token = try box.enroll("root", ["--hotp"])
        let asked = try box.login(probe, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(asked.status == PAM.success, "\(asked)")
        #expect(asked.prompts == [PAM.defaultPrompt], "\(asked)")
    }

    @Test("An unknown user sees exactly what a known user with a wrong code sees, and fails")
    func unknownUserLooksLikeKnownUser() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("enum", ["deny=0"])
        let rootCode = try Oath.hotp(token.secret, counter: 0)
        let wrong = try Oath.wrongHOTP(token.secret)

        let known = try box.login(service, "root", [wrong])
        let unknown = try box.login(service, Self.unknownUser, [wrong])
        #expect(known.status == PAM.authError, "\(known)")
        #expect(unknown.status == PAM.authError, "\(unknown)")
        #expect(unknown.prompts == [PAM.defaultPrompt], "\(unknown)")
        #expect(unknown.stdout == known.stdout, "the conversation tells the two apart:\n\(known)\n\(unknown)")

        // Root's valid code does not open an unknown account, and is not consumed by trying.
        let borrowed = try box.login(service, Self.unknownUser, [rootCode])
        #expect(borrowed.status == PAM.authError, "\(borrowed)")
        let own = try box.login(service, "root", [rootCode])
        #expect(own.status == PAM.success, "\(own)")
    }

    @Test("use_first_pass: the earlier password is the code, and there is never a prompt")
    func useFirstPass() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let code = try Oath.hotp(token.secret, counter: 0)
        let wrong = try Oath.wrongHOTP(token.secret)

        let alone = try box.service("first-alone", ["use_first_pass"])
        let noAuthtok = try box.login(alone, "root", [code])
        #expect(noAuthtok.status == PAM.authError, "no PAM_AUTHTOK: deny without asking: \(noAuthtok)")
        #expect(noAuthtok.prompts.isEmpty, "\(noAuthtok)")

        let stacked = try box.firstPassService("first", ["use_first_pass"])
        let wrongAuthtok = try box.login(stacked, "root", [wrong, code])
        #expect(wrongAuthtok.status == PAM.authError, "\(wrongAuthtok)")
        #expect(wrongAuthtok.prompts == [PAM.firstPassPrompt], "use_first_pass must not fall back to a prompt: \(wrongAuthtok)")

        let accepted = try box.login(stacked, "root", [code])
        #expect(accepted.status == PAM.success, "\(accepted)")
        #expect(accepted.prompts == [PAM.firstPassPrompt], "\(accepted)")
    }

    @Test("try_first_pass: a wrong earlier password leads to the prompt; a right one needs none")
    func tryFirstPass() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.firstPassService("try", ["try_first_pass"])
        let codes = try (0...12).map { try Oath.hotp(token.secret, counter: UInt64($0)) }
        let wrong = try Oath.wrongHOTP(token.secret)

        let prompted = try box.login(service, "root", [wrong, codes[0]])
        #expect(prompted.status == PAM.success, "\(prompted)")
        #expect(prompted.prompts == [PAM.firstPassPrompt, PAM.defaultPrompt], "a wrong first password must lead to one prompt: \(prompted)")

        let direct = try box.login(service, "root", [codes[1]])
        #expect(direct.status == PAM.success, "\(direct)")
        #expect(direct.prompts == [PAM.firstPassPrompt], "a right first password needs no prompt: \(direct)")

        let bothWrong = try box.login(service, "root", [wrong, wrong])
        #expect(bothWrong.status == PAM.authError, "\(bothWrong)")
        #expect(bothWrong.prompts == [PAM.firstPassPrompt, PAM.defaultPrompt], "\(bothWrong)")

        // Without an earlier module, try_first_pass simply prompts.
        let alone = try box.service("try-alone", ["try_first_pass"])
        let plain = try box.login(alone, "root", [codes[2]])
        #expect(plain.status == PAM.success, "\(plain)")
        #expect(plain.prompts == [PAM.defaultPrompt], "\(plain)")
    }

    @Test("forward_pass: one prompt for password+code; the password goes on as PAM_AUTHTOK")
    func forwardPass() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        // libpam does not show PAM_AUTHTOK to applications, so the next module in the stack,
        // pam_exec with expose_authtok, records it. It runs /bin/sh on the script rather than the
        // script itself: a script just written can fail exec with ETXTBSY while another test's
        // fork holds its write descriptor (PAM_SYSTEM_ERR under load).
        let capture = box.path("authtok")
        let script = box.path("capture-authtok.sh")
        try box.write("#!/bin/sh\ncat > \"$1\"\n", to: script, mode: 0o755)
        let service = try box.service("forward", ["forward_pass"],
                                      then: ["auth required pam_exec.so expose_authtok quiet /bin/sh \(script) \(capture)"])
        func forwarded() throws -> String {
            let text = try String(contentsOfFile: capture, encoding: .utf8)
            return String(text.filter { $0 != "\0" && $0 != "\n" })
        }
        let code = try Oath.hotp(token.secret, counter: 0)

        let accepted = try box.login(service, "root", ["hunter2" + code])
        #expect(accepted.status == PAM.success, "\(accepted)")
        #expect(accepted.prompts == [PAM.forwardPassPrompt], "\(accepted)")
        #expect(try forwarded() == "hunter2", "the next module must get the password without the code")

        // A wrong (here: replayed) code still hands on the password, and the stack fails.
        try? FileManager.default.removeItem(atPath: capture)
        let refused = try box.login(service, "root", ["hunter2" + code])
        #expect(refused.status == PAM.authError, "\(refused)")
        #expect(try forwarded() == "hunter2")

        // The code alone (empty password) works too.
        let codeOnly = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 1)])
        #expect(codeOnly.status == PAM.success, "\(codeOnly)")
    }

    @Test("groups=: members are asked, non-members and excluded members are ignored")
    func groups() throws {
        let box = try Sandbox()
        _ = try box.enroll("root", ["--hotp"])
        let asked: [(String, String)] = [("in-root", "groups=root"), ("in-wildcard", "groups=ro*"), ("in-list", "groups=securotp-it-nogroup,root")]
        for (name, argument) in asked {
            let service = try box.ignoreProbe(name, [argument, "deny=0"])
            let result = try box.login(service, "root", ["123456"])
            #expect(result.prompts == [PAM.defaultPrompt], "\(argument): root (group root) must be asked: \(result)")
            #expect(result.status == PAM.authError, "\(argument): \(result)")
        }
        let ignoredWith: [(String, String)] = [("excluded", "groups=!root"), ("outside", "groups=securotp-it-nogroup"), ("excluded-wins", "groups=root,!root")]
        for (name, argument) in ignoredWith {
            let service = try box.ignoreProbe(name, [argument, "deny=0"])
            let result = try box.login(service, "root", ["123456"])
            #expect(result.status == PAM.ignoreProbeExit && result.infos == [PAM.ignoreProbeInfo],
                    "\(argument): expected PAM_IGNORE for root: \(result)")
            #expect(result.prompts.isEmpty, "\(argument): \(result)")
        }
        // A user NSS cannot resolve is not ignored (that would skip the factor): asked and failed.
        let service = try box.ignoreProbe("unknown", ["groups=!root", "deny=0"])
        let unknown = try box.login(service, Self.unknownUser, ["123456"])
        #expect(unknown.status == PAM.authError, "\(unknown)")
        #expect(unknown.prompts == [PAM.defaultPrompt], "\(unknown)")
    }
}
