// Login methods in order (docs/configuration.md, "Login methods"), end to end: the real module
// loaded by libpam, the software FIDO key, policies set with `securotp policy`.
import Foundation
import Testing

@Suite("Login methods: order and fall-through through the real module", .serialized)
struct MethodOrderLoginTests {
    static let cue = "Please touch the device."

    /// root with a FIDO credential made by pamu2fcfg on `key` and a TOTP token.
    private func fidoAndTOTP(_ box: Sandbox, _ key: SoftKey) throws -> Enrollment {
        let made = try key.pamu2fcfg("root")
        try #require(made.status == 0, "\(made)")
        let line = try #require(made.lines.first { $0.hasPrefix("root:") }, "\(made)")
        let imported = try box.cli(["import", "root", line])
        try #require(imported.status == 0, "\(imported)")
        return try box.enroll("root")
    }

    @Test("securotp policy: set, show, list, replace, clear; bad lists and --server are refused")
    func policyCommand() throws {
        let box = try Sandbox()
        _ = try box.enroll("root")
        let set = try box.cli(["policy", "root", "--methods", "fido,otp"])
        #expect(set.status == 0 && set.lines == ["root fido,otp"], "\(set)")
        #expect(try box.cli(["policy", "root"]).lines == ["root fido,otp"])
        #expect(try box.cli(["policy", "@wheel", "--methods", "otp"]).status == 0)
        #expect(try box.cli(["policy"]).lines == ["@wheel otp", "root fido,otp"])
        #expect(try box.cli(["policy", "root", "--methods", "push,otp"]).lines == ["root push,otp"])
        let cleared = try box.cli(["policy", "root", "--clear"])
        #expect(cleared.status == 0 && cleared.lines == ["Policy of root removed."], "\(cleared)")
        #expect(try box.cli(["policy", "root"]).lines.first?.hasPrefix("root has no policy") == true)
        for bad in ["sms", "otp,otp", "", "fido,,otp"] {
            let refused = try box.cli(["policy", "root", "--methods", bad])
            #expect(refused.status == 64, "\(bad): \(refused)")
            #expect(refused.stderr.contains("fido, push, otp"), "\(refused)")
        }
        #expect(try box.cli(["policy", "root", "--methods", "otp", "--clear"]).status == 64)
        #expect(try box.cli(["policy"]).lines == ["@wheel otp"], "refusals changed nothing")
    }

    @Test("fido,otp: with the key attached a touch logs in, no code asked for")
    func fidoFirstTouchLogsIn() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        _ = try fidoAndTOTP(box, key)
        #expect(try box.cli(["policy", "root", "--methods", "fido,otp"]).status == 0)
        let service = try box.service("methods")
        let result = try key.login(box, service, "root")
        #expect(result.status == PAM.success, "\(result)")
        #expect(result.prompts.isEmpty && result.infos == [Self.cue], "\(result)")
    }

    @Test("fido,otp: a refused touch hands over to the code prompt, and the code logs in")
    func refusedTouchFallsThrough() async throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let token = try fidoAndTOTP(box, key)
        #expect(try box.cli(["policy", "root", "--methods", "fido,otp"]).status == 0)
        let service = try box.service("methods")
        try await Clock.waitForFreshStep()
        let result = try key.refusing().login(box, service, "root", [try Oath.totp(token.secret)])
        #expect(result.status == PAM.success, "\(result)")
        #expect(result.infos == [Self.cue] && result.prompts == [PAM.defaultPrompt], "\(result)")

        // Without methods set, a refused touch still fails the login (today's behaviour).
        #expect(try box.cli(["policy", "root", "--clear"]).status == 0)
        let standard = try key.refusing().login(box, service, "root", ["000000"])
        #expect(standard.status == PAM.authError && standard.prompts.isEmpty, "\(standard)")
    }

    @Test("methods=otp (module argument): the key is never asked for, even attached; the code logs in")
    func otpOnlySkipsFido() async throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let token = try fidoAndTOTP(box, key)
        let service = try box.service("methods", ["methods=otp"])
        try await Clock.waitForFreshStep()
        let before = try key.storedCounter()
        let result = try key.login(box, service, "root", [try Oath.totp(token.secret)])
        #expect(result.status == PAM.success, "\(result)")
        #expect(result.infos.isEmpty && result.prompts == [PAM.defaultPrompt], "no touch asked for: \(result)")
        #expect(try key.storedCounter() == before, "the key was not used")
    }

    @Test("A group's policy applies; the user's own overrides it")
    func groupThenUser() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        _ = try fidoAndTOTP(box, key)
        #expect(try box.cli(["policy", "@root", "--methods", "otp"]).status == 0)
        let service = try box.service("methods")
        let group = try key.login(box, service, "root", ["000000"])
        #expect(group.status == PAM.authError && group.infos.isEmpty && group.prompts == [PAM.defaultPrompt], "\(group)")
        #expect(try box.cli(["policy", "root", "--methods", "fido"]).status == 0)
        let own = try key.login(box, service, "root")
        #expect(own.status == PAM.success && own.prompts.isEmpty, "\(own)")
    }

    @Test("No usable method: prompted and refused like a user without a token, even with the right code; nullok never ignores a token holder")
    func noUsableMethod() async throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let token = try fidoAndTOTP(box, key)
        let service = try box.service("methods", ["methods=fido"])
        try await Clock.waitForFreshStep()
        let code = try Oath.totp(token.secret)
        let denied = try key.refusing().login(box, service, "root", [code])
        #expect(denied.status == PAM.authError, "a refused touch and no other method: \(denied)")
        #expect(denied.prompts == [PAM.defaultPrompt], "the prompt a user without a token gets: \(denied)")

        // A user without any token, for comparison: the same prompt and refusal.
        let stranger = try box.service("stranger", ["methods=fido"])
        let none = try Run.run(box.pamCheck, ["--confdir", box.pamDirectory, stranger, "nobody", "123456"])
        #expect(none.status == denied.status && none.prompts == denied.prompts && none.errors == denied.errors, "\(none)\n\(denied)")

        // nullok with methods=push (no usable method here): a policy that leaves no method must
        // not make the factor of a user who holds a key and a token optional — prompted and
        // refused, never ignored.
        let probe = try box.ignoreProbe("probe", ["methods=push", "nullok"])
        let holder = try key.login(box, probe, "root", [code])
        #expect(holder.status != PAM.ignoreProbeExit && holder.status != PAM.success, "\(holder)")
        #expect(holder.prompts == [PAM.defaultPrompt], "\(holder)")
    }
}
