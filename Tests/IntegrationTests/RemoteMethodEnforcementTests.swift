// Login methods in remote mode, end to end (docs/configuration.md, "Login methods"): the real
// module loaded by the real libpam against a real securotpd, the policy set with
// `securotp --server URL policy`; the validator refuses a passcode for a user whose methods
// leave out otp even when a host sends /v1/verify itself, skipping the module.
import Foundation
import Testing

@Suite("Login methods in remote mode: the validator enforces them", .serialized)
struct RemoteMethodEnforcementTests {
    @Test("methods=fido set over --server (for the user, then for a group of the user): a right TOTP code logs nobody in, through the module or sent to /v1/verify directly")
    func fidoOnlyRefusesCodes() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root")
        let adminFile = world.box.path("admin.cred")
        #expect(try world.cli(["admin", "add", "ops", "--output", adminFile]).status == 0)
        let validator = try world.start()
        let remote = ["--server", validator.url, "--credential", adminFile, "--ca-file", world.pki.caFile]
        let service = try world.service("methods-enforced", validator)

        let set = try world.box.cli(remote + ["policy", "root", "--methods", "fido"])
        #expect(set.status == 0 && set.stdout == "root fido\n", "\(set)")
        let shown = try world.box.cli(remote + ["policy"])
        #expect(shown.status == 0 && shown.stdout == "root fido\n", "\(shown)")
        #expect(try world.cli(["policy", "root"]).stdout == "root fido\n", "kept in the validator's store")

        let login = try world.box.login(service, "root", [try Oath.totp(token.secret)])
        #expect(login.status == PAM.authError, "a right code with otp left out: \(login)")

        // A host that skips the module: the same right code, straight to the validator.
        let hostCredential = try String(contentsOfFile: world.credential, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let body = world.box.path("verify.json")
        try JSONSerialization.data(withJSONObject: ["user": "root", "passcode": try Oath.totp(token.secret)]).write(to: URL(fileURLWithPath: body))
        let direct = try Run.run("/usr/bin/curl", ["-sS", "--cacert", world.pki.caFile, "-H", "Authorization: Bearer \(hostCredential)",
                                                   "-H", "Content-Type: application/json", "--data-binary", "@\(body)", validator.url + "/v1/verify"])
        let answer = (try? JSONSerialization.jsonObject(with: Data(direct.stdout.utf8))) as? [String: Any] ?? [:]
        #expect(answer["result"] as? String == "reject" && answer["reason"] as? String == "no active token",
                "answered as for a user without a token: \(direct)")
        let audit = try world.box.cli(remote + ["audit", "root", "--format", "json"])
        #expect(audit.stdout.contains("otp refused: not among the user's login methods (fido"), "\(audit)")

        let cleared = try world.box.cli(remote + ["policy", "root", "--clear"])
        #expect(cleared.status == 0 && cleared.stdout == "Policy of root removed.\n", "\(cleared)")

        // A group's policy: the module names root's groups in the preflight (NSS: root is in
        // group root), and the validator narrows the methods by @root's.
        #expect(try world.box.cli(remote + ["policy", "@root", "--methods", "fido"]).status == 0)
        let byGroup = try world.box.login(service, "root", [try Oath.totp(token.secret)])
        #expect(byGroup.status == PAM.authError, "@root's policy leaves out otp: \(byGroup)")
        #expect(try world.box.cli(remote + ["policy", "@root", "--clear"]).status == 0)

        let after = try world.box.login(service, "root", [try Oath.totp(token.secret)])
        #expect(after.status == PAM.success, "the same code once otp is allowed again: \(after)")
    }
}
