// FIDO security keys in remote mode, end to end (docs/fido.md, "Remote mode"): the real module,
// loaded by the real libpam with the software key attached, asks a real securotpd for the
// challenge and sends it the assertion; the validator keeps the credential and its counter.
// Replay of a challenge and racing assertions are checked against the validator's API in
// SecurOTPServerTests/FidoAPITests.swift.
import Foundation
import SecurOTPCore
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

    // MARK: A security key signs only for this host (issue 25; docs/security.md)

    /// A WebAuthn client data hash for another site, which a phishing proxy would want signed.
    static let foreignClientDataHash = PushStatement.sha256(Array(#"{"type":"webauthn.get","challenge":"cGhpc2hlZA","origin":"https://accounts.example","crossOrigin":false}"#.utf8))

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// One credential of `key` made by pamu2fcfg for `rp` (nil: its default, this host's
    /// pam://HOSTNAME), as a `/v1/fido/challenge` answer names it, saying it is for `offeredAs`.
    private func offered(_ key: SoftKey, serial: String, rp: String?, offeredAs origin: String) throws -> [String: Any] {
        let made = try key.pamu2fcfg("root", rp.map { ["-o", $0, "-i", $0] } ?? [])
        let line = try #require(made.lines.first { $0.hasPrefix("root:") }, "\(made)")
        let credential = try #require(try U2FCredential.parse(line: line).credentials.first)
        let handle = try #require(Data(base64Encoded: credential.keyHandle))
        return ["serial": serial, "key_handle": Self.base64URL(Array(handle)), "type": "es256", "origin": origin,
                "presence": true, "verification": false, "pin": false]
    }

    /// A stand-in validator for a FIDO-only user: preflight says fido, `/v1/fido/challenge`
    /// answers `challenge` — with the old protocol's `client_data_hash` set to another site's
    /// WebAuthn hash, as a relaying validator would send — and `/v1/fido/verify` accepts.
    /// Returns it and a PAM service whose module asks it.
    private func hostileValidator(_ box: Sandbox, challenge: [UInt8], credentials: [[String: Any]], _ more: [String] = []) throws -> (FakeValidator, String) {
        let answer: [String: Any] = ["id": "0123456789abcdef0123456789abcdef", "challenge": Self.base64URL(challenge),
                                     "client_data_hash": Self.base64URL(Self.foreignClientDataHash), "expires_in": 180, "credentials": credentials]
        let body = String(decoding: try JSONSerialization.data(withJSONObject: answer), as: UTF8.self)
        let fake = try FakeValidator(box, answers: ["/v1/preflight": [.json(#"{"has_tokens":false,"code_digits":[],"fido":true}"#)],
                                                    "/v1/fido/challenge": [.json(body)],
                                                    "/v1/fido/verify": [.json(#"{"result":"accept","serial":"own-1","reason":"security key"}"#)]])
        let credential = box.path("host.cred")
        try box.write("sotp_h_0123456789abcdef_" + String(repeating: "5a", count: 32) + "\n", to: credential, mode: 0o600)
        let service = try box.service("fido-hostile-\(UUID().uuidString.prefix(6).lowercased())", ["validator=" + fake.url, "host_credential=" + credential] + more,
                                      stateDirectory: box.path("host"))
        return (fake, service)
    }

    /// One login with `key` attached, its syslog lines captured where the machine allows it.
    private func login(_ box: Sandbox, _ key: SoftKey, _ service: String, syslog: SyslogCapture?) throws -> ProcessResult {
        guard let syslog else { return try key.login(box, service, "root") }
        let script = """
            mount -t tmpfs -o mode=755 none /dev && mknod -m 666 /dev/null c 1 3 && ln -s "$1" /dev/log && shift && exec "$@"
            """
        return try Run.start("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", syslog.path,
                                                  box.pamCheck, "--confdir", box.pamDirectory, service, "root"],
                             environment: try key.environment()).wait()
    }

    @Test("A stand-in validator offering only credentials made for another site: the key is never asked, each is dropped and logged (SOTP-M120), the login goes on as with no usable key")
    func foreignCredentialNeverAsked() throws {
        let box = try Sandbox()
        let key = SoftKey(box).recording(box)
        let foreign = try offered(key, serial: "foreign-1", rp: "accounts.example", offeredAs: "accounts.example")
        var hostile = foreign
        hostile["serial"] = "foreign-2"
        hostile["origin"] = "accounts.example\u{1b}[2J\u{202e}" + String(repeating: "x", count: 200)
        let (fake, service) = try hostileValidator(box, challenge: Array(repeating: 7, count: 32), credentials: [foreign, hostile])
        let syslog = SyslogCapture.available ? try SyslogCapture(box) : nil

        let result = try login(box, key, service, syslog: syslog)
        #expect(result.status == PAM.authError, "a FIDO-only user with no usable key is refused: \(result)")
        #expect(result.prompts.isEmpty && result.infos.isEmpty, "no cue: the key is not asked for: \(result)")
        let asked = try key.requests()
        #expect(asked.isEmpty, "the key was asked to sign for another site: \(asked)")
        let paths = try fake.requests().map(\.path)
        #expect(!paths.contains("/v1/fido/verify"), "\(paths)")
        if let syslog {
            let lines = syslog.lines()
            let code = ModuleLogCode.fidoForeignCredentialDropped.rawValue + ": "
            let dropped = lines.compactMap { line in line.range(of: "): " + code).map { String(line[$0.upperBound...]) } }
            #expect(dropped.count == 2, "each offered credential of another RP ID is logged: \(lines)")
            #expect(dropped.first?.contains("foreign-1") == true && dropped.first?.contains("accounts.example") == true, "\(dropped)")
            #expect(dropped.allSatisfy { !$0.contains("\u{1b}") && !$0.contains("\u{202e}") && $0.utf8.count < 600 },
                    "the validator's text is escaped and bounded: \(dropped)")
        }
    }

    @Test("A stand-in validator's hash is never signed: the key signs this host's own client data for its own origin, dropping another site's credential, and the validator is sent that client data")
    func hostBuildsTheClientData() throws {
        let box = try Sandbox()
        let key = SoftKey(box).recording(box)
        let foreign = try offered(key, serial: "foreign-1", rp: "accounts.example", offeredAs: "accounts.example")
        let own = try offered(key, serial: "own-1", rp: nil, offeredAs: SoftFIDO.defaultOrigin)
        let challenge = (0..<32).map { UInt8($0 * 3 + 1) }
        let (fake, service) = try hostileValidator(box, challenge: challenge, credentials: [foreign, own])

        let result = try key.login(box, service, "root")
        #expect(result.status == PAM.success, "\(result)")
        let expected = #"{"type":"securotp.fido.login","challenge":""# + Self.base64URL(challenge) + #"","origin":""# + SoftFIDO.defaultOrigin + #""}"#
        let asked = try key.requests()
        #expect(!asked.isEmpty && asked.allSatisfy { $0.rpID == SoftFIDO.defaultOrigin }, "the key is asked only for this host's origin: \(asked)")
        #expect(!asked.contains { $0.clientDataHash == Self.hex(Self.foreignClientDataHash) }, "the validator's hash was signed: \(asked)")
        #expect(asked.filter(\.presence).map(\.clientDataHash) == [Self.hex(PushStatement.sha256(Array(expected.utf8)))],
                "the touch signs SHA-256 of the host's own client data: \(asked)")

        let sent = try fake.requests()
        let verify = try #require(sent.first { $0.path == "/v1/fido/verify" }?.json, "\(sent.map(\.body))")
        #expect(verify["serial"] as? String == "own-1", "\(verify)")
        #expect(verify["client_data"] as? String == Self.base64URL(Array(expected.utf8)), "\(verify)")
    }

    @Test("appid=: a credential made for the host's app ID is asked for with the app ID, in the client data too")
    func appIDCredential() throws {
        let box = try Sandbox()
        let key = SoftKey(box).recording(box)
        let legacy = try offered(key, serial: "own-1", rp: "pam://legacy", offeredAs: "pam://legacy")
        let challenge = Array(repeating: UInt8(9), count: 32)
        let (fake, service) = try hostileValidator(box, challenge: challenge, credentials: [legacy], ["appid=pam://legacy"])

        let result = try key.login(box, service, "root")
        #expect(result.status == PAM.success, "\(result)")
        let expected = #"{"type":"securotp.fido.login","challenge":""# + Self.base64URL(challenge) + #"","origin":"pam://legacy"}"#
        let asked = try key.requests()
        #expect(!asked.isEmpty && asked.allSatisfy { $0.rpID == "pam://legacy" }, "\(asked)")
        #expect(asked.filter(\.presence).map(\.clientDataHash) == [Self.hex(PushStatement.sha256(Array(expected.utf8)))], "\(asked)")
        let challengeRequest = try #require(try fake.requests().first { $0.path == "/v1/fido/challenge" }?.json)
        #expect(challengeRequest["appid"] as? String == "pam://legacy", "\(challengeRequest)")
        let verify = try #require(try fake.requests().first { $0.path == "/v1/fido/verify" }?.json)
        #expect(verify["client_data"] as? String == Self.base64URL(Array(expected.utf8)), "\(verify)")
    }
}
