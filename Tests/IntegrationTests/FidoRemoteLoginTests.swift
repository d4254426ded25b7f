// FIDO security keys in remote mode, end to end (docs/fido.md, "Remote mode"): the real module,
// loaded by the real libpam with the software key attached, asks a real securotpd for the
// challenge and sends it the assertion; the validator keeps the credential and its counter.
// Replay of a challenge and racing assertions are checked against the validator's API in
// SecurOTPServerTests/FidoAPITests.swift.
import Foundation
import Testing

@Suite("FIDO security keys in remote mode: pam_securotp with the software key against securotpd", .serialized)
struct FidoRemoteLoginTests {
    /// The validator's store: SQLite, or PostgreSQL (scripts/postgres-test.sh starts it). Method
    /// policies are kept in SQLite only, so methodsFromValidator runs there.
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// pamu2fcfg's line for USER imported into the validator's store; the key that made it.
    private func enrollOnValidator(_ world: RemoteWorld, user: String = "root") throws -> SoftKey {
        let key = SoftKey(world.box)
        let made = try key.pamu2fcfg(user)
        try #require(made.status == 0, "\(made)")
        let line = try #require(made.lines.first { $0.hasPrefix(user + ":") }, "\(made)")
        let imported = try world.cli(["import", user, line])
        try #require(imported.status == 0, "\(imported)")
        return key
    }

    private func exported(_ world: RemoteWorld, _ user: String) throws -> [[String: Any]] {
        let list = try world.cli(["fido", "export", user, "--format", "json"])
        try #require(list.status == 0, "\(list)")
        let json = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8))
        return (json as? [[String: Any]]) ?? ((json as? [String: Any])?["credentials"] as? [[String: Any]]) ?? []
    }

    @Test("A FIDO-only user logs in by touch, the validator's counter rises; a refused touch fails without a prompt", arguments: Store.allCases)
    func touchLogin(_ store: Store) throws {
        let world = try RemoteWorld(postgres: store == .postgres)
        let key = try enrollOnValidator(world)
        let validator = try world.start()
        let service = try world.service("fido-remote", validator)

        let first = try key.login(world.box, service, "root")
        #expect(first.status == PAM.success, "\(first)")
        #expect(first.prompts.isEmpty, "no code asked for: \(first)")
        #expect(first.infos == [FidoLoginTests.cue], "\(first)")
        let counter = try key.storedCounter()
        let second = try key.login(world.box, service, "root")
        #expect(second.status == PAM.success, "\(second)")
        let kept = try exported(world, "root").first?["counter"] as? Int ?? 0
        #expect(kept > Int(counter), "the validator keeps the counter: \(kept) after the key's \(counter)")
        if let database = world.database {
            let row = try Run.run("/usr/bin/psql", [database, "-qAtc", "SELECT state, counter FROM tokens WHERE kind = 'fido' AND \"user\" = 'root'"])
            #expect(row.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "active|\(kept)", "the credential and its counter are PostgreSQL's: \(row)")
        }

        let refused = try key.refusing().login(world.box, service, "root")
        #expect(refused.status == PAM.authError, "no touch, no login: \(refused)")
        #expect(refused.prompts.isEmpty, "a FIDO-only user is not asked for a code: \(refused)")

        let stranger = try SoftKey(world.box, name: "other.state").login(world.box, service, "root")
        #expect(stranger.status == PAM.authError, "another key holds no credential of the user: \(stranger)")
        #expect(stranger.prompts.isEmpty, "as in local mode, a FIDO-only user without a usable key is refused unprompted: \(stranger)")
    }

    @Test("securotp --server imports pamu2fcfg's line into the validator and exports it as the local store does; the module logs in with it", arguments: Store.allCases)
    func importOverServer(_ store: Store) throws {
        let world = try RemoteWorld(postgres: store == .postgres)
        let adminFile = world.box.path("admin.cred")
        #expect(try world.cli(["admin", "add", "ops", "--output", adminFile]).status == 0)
        let validator = try world.start()
        let remote = ["--server", validator.url, "--credential", adminFile, "--ca-file", world.pki.caFile]
        let key = SoftKey(world.box)
        let made = try key.pamu2fcfg("root")
        let line = try #require(made.lines.first { $0.hasPrefix("root:") }, "\(made)")

        let imported = try world.box.cli(remote + ["import", "root", line])
        #expect(imported.status == 0 && imported.stdout.hasPrefix("Imported 1 FIDO credential for root"), "\(imported)")
        let again = try world.box.cli(remote + ["import", "root", line])
        #expect(again.status != 0 && again.stderr.contains("already has this FIDO credential"), "\(again)")
        let remoteExport = try world.box.cli(remote + ["fido", "export", "root"])
        let localExport = try world.cli(["fido", "export", "root"])
        #expect(remoteExport.status == 0 && remoteExport.stdout == localExport.stdout && remoteExport.stdout.hasPrefix("root:"), "\(remoteExport)\n\(localExport)")
        #expect(try world.cli(["fido", "export", "root", "--format", "json"]).stdout
                == (try world.box.cli(remote + ["fido", "export", "root", "--format", "json"])).stdout)
        // securotp list shows the credential over --server as on the validator's own store.
        for format in ["text", "json"] {
            let remoteList = try world.box.cli(remote + ["list", "root", "--format", format])
            let localList = try world.cli(["list", "root", "--format", format])
            #expect(remoteList.status == 0 && remoteList.stdout == localList.stdout && remoteList.stdout.contains("fido"), "\(remoteList)\n\(localList)")
        }

        let service = try world.service("fido-imported", validator)
        let login = try key.login(world.box, service, "root")
        #expect(login.status == PAM.success && login.prompts.isEmpty, "\(login)")
    }

    @Test("A restored state file (a cloned key) is refused by the validator and the credential disabled there", arguments: Store.allCases)
    func clonedKey(_ store: Store) throws {
        let world = try RemoteWorld(postgres: store == .postgres)
        let key = try enrollOnValidator(world)
        let validator = try world.start()
        let service = try world.service("fido-cloned", validator)
        let saved = try String(contentsOfFile: key.state, encoding: .utf8)
        #expect(try key.login(world.box, service, "root").status == PAM.success)

        try world.box.write(saved, to: key.state, mode: 0o600) // the clone: the counter goes back
        let cloned = try key.login(world.box, service, "root")
        #expect(cloned.status == PAM.authError, "\(cloned)")
        let credentials = try exported(world, "root")
        #expect(credentials.first?["state"] as? String == "cloned", "\(credentials)")
        // Even once the clone's counter passes the stored one: the credential is no longer
        // offered, and a user left without a usable method is prompted and refused.
        for _ in 0..<2 { _ = try key.login(world.box, service, "root", ["123456"]) }
        let later = try key.login(world.box, service, "root", ["123456"])
        #expect(later.status == PAM.authError && later.infos.isEmpty, "a cloned credential stays disabled: \(later)")
    }

    @Test("Methods from the validator's policy: otp,fido asks for the code and never for the key; fido,otp falls to the code after a refused touch")
    func methodsFromValidator() throws {
        let world = try RemoteWorld()
        let key = try enrollOnValidator(world)
        let token = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        let service = try world.service("fido-methods", validator)

        // Without a policy a refused touch ends the login, as in local mode.
        let standard = try key.refusing().login(world.box, service, "root", ["000000"])
        #expect(standard.status == PAM.authError && standard.prompts.isEmpty, "\(standard)")

        #expect(try world.cli(["policy", "root", "--methods", "otp,fido"]).status == 0)
        let codeFirst = try key.login(world.box, service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(codeFirst.status == PAM.success, "\(codeFirst)")
        #expect(codeFirst.prompts == [PAM.defaultPrompt] && codeFirst.infos.isEmpty, "the key is not asked for: \(codeFirst)")

        #expect(try world.cli(["policy", "root", "--methods", "fido,otp"]).status == 0)
        let fallThrough = try key.refusing().login(world.box, service, "root", [try Oath.hotp(token.secret, counter: 1)])
        #expect(fallThrough.status == PAM.success, "\(fallThrough)")
        #expect(fallThrough.infos == [FidoLoginTests.cue] && fallThrough.prompts == [PAM.defaultPrompt], "\(fallThrough)")

        #expect(try world.cli(["policy", "root", "--methods", "fido"]).status == 0)
        let noCodes = try key.refusing().login(world.box, service, "root", [try Oath.hotp(token.secret, counter: 2)])
        #expect(noCodes.status == PAM.authError, "otp is not allowed: the code is refused: \(noCodes)")
    }
}
