// Holding a factor is not being able to use it now (issue 25, items 1 and 2; docs/security.md):
// `nullok` / `nouserok` skip only a user who holds no second factor from any source. A device
// that is blocked (three wrong PINs), fraud-blocked (`deny --fraud`) or left out by a policy, a
// cloned security key, a key in `authfile=` that `methods` leaves out: the user is prompted and
// refused, never let through on the password alone. The real module loaded by the real libpam;
// in remote mode a real securotpd on SQLite and on PostgreSQL.
import Foundation
import Testing

@Suite("Holding a factor is not being able to use it now: nullok skips only users who hold nothing", .serialized)
struct HolderLoginTests {
    /// The validator's store.
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// Why a device-only user's device cannot be used now.
    enum Unusable: String, CaseIterable, CustomTestStringConvertible {
        /// The user reported a push as fraud (`deny --fraud`): pushes blocked until `device unblock`.
        case fraudBlocked = "fraud-blocked"
        /// Three wrong device PINs: the device blocked itself.
        case pinBlocked = "PIN-blocked"
        /// The user's policy leaves push out.
        case policyExcluded = "excluded by policy"
        var testDescription: String { rawValue }
    }

    /// SQL on a store: the validator's PostgreSQL database, else the SQLite file in `state`.
    private static func sql(database: String?, state: String, _ statement: String) throws {
        let result = if let database {
            try Run.run("/usr/bin/psql", [database, "-qAtc", statement])
        } else {
            try Run.run("/usr/bin/sqlite3", [state + "/securotp.db", statement])
        }
        try #require(result.status == 0, "\(statement): \(result)")
    }

    /// Root's device (added pending with `securotp device add`) as an activation leaves it.
    private static func activation(_ store: Store) -> String {
        "UPDATE devices SET state = 'active', name = 'phone', public_key = \(store == .postgres ? "decode('04', 'hex')" : "X'04'") WHERE \"user\" = 'root'"
    }

    @Test("Remote, nullok: a device-only user whose device cannot be used now is prompted and refused, never ignored; a pending device holds nothing",
          arguments: Store.allCases, Unusable.allCases)
    func remoteDeviceHolder(_ store: Store, _ unusable: Unusable) throws {
        let world = try RemoteWorld(postgres: store == .postgres)
        let sql = { (statement: String) throws in try Self.sql(database: world.database, state: world.validatorState, statement) }
        #expect(try world.cli(["device", "add", "root"]).status == 0)
        let validator = try world.start()
        let probe = try world.ignoreProbe("holder-nullok", world.arguments(validator.url, ["nullok"]))

        // A device still waiting for its activation holds nothing: nullok skips the user.
        let pending = try world.box.login(probe, "root", ["123456"])
        #expect(pending.status == PAM.ignoreProbeExit && pending.prompts.isEmpty, "a pending device only: \(pending)")

        try sql(Self.activation(store))
        switch unusable {
        case .fraudBlocked: try sql("INSERT INTO push_users (\"user\", blocked) VALUES ('root', true)")
        case .pinBlocked: try sql("UPDATE devices SET state = 'blocked' WHERE \"user\" = 'root'")
        case .policyExcluded: #expect(try world.cli(["policy", "root", "--methods", "otp"]).status == 0)
        }
        let holder = try world.box.login(probe, "root", ["123456"])
        #expect(holder.status == PAM.authError, "the password alone must not log in: \(holder)")
        #expect(holder.prompts == [PAM.defaultPrompt], "prompted like everyone: \(holder)")
        // Someone who holds nothing at all is still skipped.
        let nobody = try world.box.login(probe, "nobody", ["123456"])
        #expect(nobody.status == PAM.ignoreProbeExit, "\(nobody)")
    }

    @Test("Remote, nullok: the host logs why a holder is refused (SOTP-M100)",
          .enabled(if: SyslogCapture.available, "needs root and mount namespaces (unshare)"))
    func remoteHolderLogged() throws {
        let world = try RemoteWorld()
        #expect(try world.cli(["device", "add", "root"]).status == 0)
        try Self.sql(database: nil, state: world.validatorState, Self.activation(.sqlite))
        try Self.sql(database: nil, state: world.validatorState, "UPDATE devices SET state = 'blocked' WHERE \"user\" = 'root'")
        let validator = try world.start()
        let service = try world.service("holder-logged", validator, ["nullok"])
        let log = try SyslogCapture(world.box)
        let login = try log.login(world.box, service, "root", ["123456"])
        #expect(login.status == PAM.authError, "\(login)")
        let lines = log.lines()
        #expect(lines.contains { $0.contains("SOTP-M100: root holds a second factor on the validator but none can be used now (no active token; no push") },
                "\(lines)")
    }

    @Test("Local, nullok: a store holding the user's active or blocked device (a host reading the validator's own store) prompts and refuses")
    func localDeviceHolder() throws {
        let box = try Sandbox()
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let probe = try box.ignoreProbe("local-holder", ["nullok"])
        #expect(try box.cli(["device", "add", "root"]).status == 0)
        let pending = try box.login(probe, "root", ["123456"])
        #expect(pending.status == PAM.ignoreProbeExit, "a pending device holds nothing: \(pending)")
        for state in ["active", "blocked"] {
            try Self.sql(database: nil, state: box.state, Self.activation(.sqlite).replacingOccurrences(of: "'active'", with: "'\(state)'"))
            let holder = try box.login(probe, "root", ["123456"])
            #expect(holder.status == PAM.authError && holder.prompts == [PAM.defaultPrompt], "\(state) device: \(holder)")
        }
    }

    @Test("Local, nouserok: a key in authfile= is held whatever methods say — methods=otp on the line, or a policy — prompted and refused, not ignored")
    func authfileHolderWithOtpOnly() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let made = try key.pamu2fcfg(user)
        try #require(made.status == 0, "\(made)")
        let line = try #require(made.lines.first { $0.hasPrefix(user + ":") }, "\(made)")
        let authfile = box.path("u2f_mappings")
        try box.write("# pam_u2f mappings\n" + line + "\n", to: authfile, mode: 0o644)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let origin = SoftFIDO.defaultOrigin
        let options = ["authfile=" + authfile, "cue", "origin=" + origin, "appid=" + origin, "nouserok"]

        let argument = try box.ignoreProbe("authfile-otp", options + ["methods=otp"])
        let byArgument = try key.login(box, argument, user, ["123456"])
        #expect(byArgument.status == PAM.authError && byArgument.prompts == [PAM.defaultPrompt], "\(byArgument)")

        let policy = try box.ignoreProbe("authfile-policy", options)
        #expect(try box.cli(["policy", user, "--methods", "otp"]).status == 0)
        let byPolicy = try key.login(box, policy, user, ["123456"])
        #expect(byPolicy.status == PAM.authError && byPolicy.prompts == [PAM.defaultPrompt], "\(byPolicy)")

        // A user without a line is still skipped.
        let absent = try key.login(box, argument, "daemon")
        #expect(absent.status == PAM.ignoreProbeExit, "\(absent)")
    }

    @Test("Local, nullok, methods=otp: a user whose only credential is a cloned security key is prompted and refused, not ignored")
    func clonedKeyHolder() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let made = try key.pamu2fcfg("root")
        let line = try #require(made.lines.first { $0.hasPrefix("root:") }, "\(made)")
        #expect(try box.cli(["import", "root", line]).status == 0)
        let probe = try box.ignoreProbe("cloned", ["nullok", "methods=otp"])
        let active = try key.login(box, probe, "root", ["123456"])
        #expect(active.status == PAM.authError && active.prompts == [PAM.defaultPrompt], "an active key the methods leave out: \(active)")
        // What the module writes when a key's counter goes back (FidoLogin: a cloned key).
        try Self.sql(database: nil, state: box.state, "UPDATE tokens SET state = 'cloned' WHERE \"user\" = 'root' AND kind = 'fido'")
        let cloned = try key.login(box, probe, "root", ["123456"])
        #expect(cloned.status == PAM.authError && cloned.prompts == [PAM.defaultPrompt], "a cloned key: \(cloned)")
    }
}
