import Foundation
import Glibc
import Testing

/// What an attacker's review (issue 12) found, held through the real module and a real
/// securotpd: a host's scope is not observable at the login prompt, and what a host sends
/// cannot reach an admin's terminal or fill the validator's disk.
@Suite("Attack review: host scope and audit log")
struct AttackReviewTests {
    /// A validator whose host may verify root (enrolled) and daemon (no token); bin is
    /// enrolled but outside the host's users, and the last user exists nowhere.
    private static let inScope = "root", noToken = "daemon", outOfScope = "bin", unknown = "securotp-no-such-user"

    @Test("Out-of-scope, unknown and no-token users see the enrolled user's prompts and fail after answering",
          arguments: [false, true])
    func scopeIsNotObservable(forwardPass: Bool) throws {
        let world = try RemoteWorld(hostUsers: "\(Self.inScope),\(Self.noToken)")
        let token = try world.enroll(Self.inScope, ["--hotp"])
        _ = try world.enroll(Self.outOfScope, ["--hotp"])
        let validator = try world.start()
        let options = forwardPass ? ["forward_pass"] : []
        let service = try world.service(forwardPass ? "scope-forward" : "scope", validator, options)
        let prefix = forwardPass ? "pass word" : ""
        let enrolled = try world.box.login(service, Self.inScope, [prefix + (try Oath.wrongHOTP(token.secret))])
        #expect(enrolled.status == PAM.authError, "\(enrolled)")
        #expect(enrolled.prompts == [forwardPass ? PAM.forwardPassPrompt : PAM.defaultPrompt], "\(enrolled)")
        for user in [Self.outOfScope, Self.unknown, Self.noToken] {
            let login = try world.box.login(service, user, [prefix + "123456"])
            #expect(login.status == PAM.authError, "\(user): \(login)")
            #expect(login.conversation == enrolled.conversation, "\(user) sees another conversation than an enrolled user:\n\(login)\n\(enrolled)")
        }
        let own = try world.box.login(service, Self.inScope, [prefix + (try Oath.hotp(token.secret, counter: 0))])
        #expect(own.status == PAM.success, "\(own)")
    }

    @Test("nullok never waves an out-of-scope user through: prompted and refused like an enrolled user")
    func scopeWithNullok() throws {
        let world = try RemoteWorld(hostUsers: Self.inScope)
        _ = try world.enroll(Self.inScope, ["--hotp"])
        _ = try world.enroll(Self.outOfScope, ["--hotp"])
        let validator = try world.start()
        let probe = try world.ignoreProbe("scope-nullok", world.arguments(validator.url, ["nullok"]))
        for user in [Self.outOfScope, Self.noToken] {
            let login = try world.box.login(probe, user, ["123456"])
            #expect(login.status == PAM.authError, "\(user) outside the host's users: \(login)")
            #expect(login.prompts == [PAM.defaultPrompt], "\(user): \(login)")
        }
    }

    @Test("Hostile user names from a host: bounded, escaped audit rows; the remote audit view and its table still work")
    func auditInjection() throws {
        let world = try RemoteWorld(hostUsers: Self.inScope)
        let validator = try world.start()
        let adminFile = world.box.path("admin.cred")
        #expect(try world.cli(["admin", "add", "ops", "--output", adminFile]).status == 0)
        let hostCredential = try String(contentsOfFile: world.credential, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let escape = "\u{1b}]0;pwned\u{07}\u{1b}[2J\u{1b}[31mroot\nFAKE audit line\u{202e}"
        let huge = String(repeating: "\u{1b}[5m", count: 200_000)
        for (index, name) in [escape, huge, huge, huge].enumerated() {
            let body = world.box.path("body-\(index).json")
            let json = try JSONSerialization.data(withJSONObject: ["user": name])
            try json.write(to: URL(fileURLWithPath: body))
            let answer = try Run.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", world.pki.caFile,
                                                       "-H", "Authorization: Bearer \(hostCredential)", "-H", "Content-Type: application/json",
                                                       "--data-binary", "@\(body)", validator.url + "/v1/preflight"])
            #expect(answer.status == 0 && ["400", "413"].contains(answer.stdout), "a hostile name is refused: \(answer)")
        }
        let remote = ["--server", validator.url, "--credential", adminFile, "--ca-file", world.pki.caFile]
        let json = try world.box.cli(remote + ["audit", "--limit", "10000", "--format", "json"])
        #expect(json.status == 0, "the remote audit view works whatever a host sent: \(json.stderr.prefix(400))")
        #expect(json.stdout.utf8.count < 64 * 1024, "audit rows are bounded: \(json.stdout.utf8.count) bytes")
        let rows = (try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) as? [[String: Any]] ?? []
        for row in rows {
            for (key, value) in row {
                guard let text = value as? String else { continue }
                #expect(text.utf8.count <= 1024, "\(key) is \(text.utf8.count) bytes")
                #expect(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f || $0.value == 0x202e }, "\(key) holds a control: \(text.debugDescription)")
            }
        }
        let table = try world.box.cli(remote + ["audit"])
        #expect(table.status == 0, "\(table.stderr.prefix(400))")
        #expect(!table.stdout.unicodeScalars.contains { $0.value == 0x1b || $0.value == 0x07 || $0.value == 0x202e },
                "raw control characters reach the terminal: \(table.stdout.prefix(2000).debugDescription)")
        #expect(!table.lines.contains { $0.hasPrefix("FAKE") }, "a name cannot start a line of its own: \(table.stdout.prefix(2000).debugDescription)")
    }

    @Test("securotpd serves metrics on metrics_listen only, and health without a credential names no version")
    func metricsListener() throws {
        let world = try RemoteWorld()
        let validator = try world.start()
        var line: Substring?
        for _ in 0..<500 where line == nil {
            line = validator.child.errorOutput.split(separator: "\n").first { $0.contains("metrics listening") }
            if line == nil { usleep(20_000) }
        }
        let field = try #require(line?.split(separator: " ").first { $0.hasPrefix("metrics_listen=") }, "\(validator.child.errorOutput)")
        let metricsAddress = field.dropFirst("metrics_listen=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        #expect(metricsAddress != validator.boundAddress)
        func get(_ url: String) throws -> ProcessResult {
            try Run.run("/usr/bin/curl", ["-sS", "--cacert", world.pki.caFile, "-w", "\n%{http_code}", url])
        }
        let onAPI = try get(validator.url + "/metrics")
        #expect(onAPI.lines.last == "404", "\(onAPI)")
        let health = try get(validator.url + "/v1/health")
        #expect(health.lines.last == "200" && health.stdout.contains(#""status":"ok""#), "\(health)")
        #expect(!health.stdout.contains("version") && !health.stdout.contains("store"), "\(health)")
        let metrics = try get("http://\(metricsAddress)/metrics")
        #expect(metrics.lines.last == "200" && metrics.stdout.contains("securotpd_requests_total"), "the API's requests are counted: \(metrics)")
    }
}
