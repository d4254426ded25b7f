// Remote mode's syslog lines (LOG_AUTHPRIV): what an admin reads to act, and never a code, PIN,
// password or credential.
import Foundation
import Glibc
import Testing

@Suite("Remote mode's syslog lines", .enabled(if: SyslogCapture.available, "needs root and mount namespaces (unshare)"))
struct RemoteLogTests {
    /// authpriv (10 << 3) plus the level.
    static func priority(_ level: Int32) -> String { "<\(80 + level)>" }

    @Test("A whole remote session logs accept, replay, reject, dialogues and lock — and none of the secrets typed")
    func sessionWithoutSecrets() throws {
        let world = try RemoteWorld()
        let token = try world.enroll("root", ["--hotp"])
        let ctf = try TokenFlowTests.ctfA()
        let imported = try world.cli(["import", "securotp-it-bob", ctf, "--format", "json"])
        let bobSerial = try #require((try JSONSerialization.jsonObject(with: Data(imported.stdout.utf8)) as? [[String: Any]])?.first?["serial"] as? String,
                                     "\(imported)")
        let validator = try world.start(["deny": "3", "unlock_time": "0", "window": "3", "resync_window": "0"])
        let service = try world.service("logged", validator)
        let forward = try world.service("logged-forward", validator, ["forward_pass"])
        let log = try SyslogCapture(world.box)
        var typed: [String] = []
        func login(_ service: String, _ user: String, _ responses: [String]) throws -> ProcessResult {
            typed += responses
            return try log.login(world.box, service, user, responses)
        }
        let codes = try (0...5).map { try Oath.hotp(token.secret, counter: UInt64($0)) }
        let wrong = try Oath.wrongHOTP(token.secret)

        #expect(try login(service, "root", [codes[0]]).status == PAM.success)
        #expect(try login(service, "root", [codes[0]]).status == PAM.authError)
        #expect(try login(forward, "root", ["hunter2" + codes[1]]).status == PAM.success)
        let step = TokenFlowTests.stepStart()
        let pin = try login(service, "securotp-it-bob", [try TokenFlowTests.stoken(ctf, at: step), "8642", "8642", try TokenFlowTests.stoken(ctf, at: step + 30, pin: "8642")])
        #expect(pin.status == PAM.success, "\(pin)")
        for _ in 1...3 { #expect(try login(service, "root", [wrong]).status == PAM.authError) }
        #expect(try login(service, "root", [codes[2]]).status == PAM.authError)

        let lines = log.lines()
        func logged(_ level: Int32, _ text: String) -> Bool {
            lines.contains { $0.hasPrefix(Self.priority(level)) && $0.contains(text) && $0.hasSuffix("[validator]") }
        }
        #expect(logged(LOG_INFO, "accepted code for root (token \(token.serial)"), "\(lines)")
        #expect(logged(LOG_WARNING, "refused a replayed code for root (token \(token.serial));"), "\(lines)")
        #expect(logged(LOG_NOTICE, "securotp-it-bob must set a new PIN for token"), "\(lines)")
        #expect(logged(LOG_NOTICE, "securotp-it-bob set a new PIN for token"), "\(lines)")
        #expect(logged(LOG_NOTICE, "rejected code for root (wrong code); 1 consecutive failure"), "\(lines)")
        #expect(logged(LOG_WARNING, "locked root after 3 consecutive failures"), "\(lines)")
        #expect(logged(LOG_NOTICE, "root is locked after repeated failures; code not checked (lift with: securotp unlock root on the validator)"), "\(lines)")

        let credential = try String(contentsOfFile: world.credential, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let secrets = Set(typed + ["hunter2", "8642", credential, String(credential.suffix(64))])
        // Serial numbers are digits too: taken out first, so a code cannot match inside one.
        for line in lines.map({ $0.replacingOccurrences(of: token.serial, with: "S").replacingOccurrences(of: bobSerial, with: "S") }) {
            for secret in secrets where line.contains(secret) {
                Issue.record("a secret (\(secret.count) characters) is in the log: \(line)")
            }
        }
    }

    @Test("failmode=safe says in a warning that logins pass without a second factor; secure says it denies")
    func failmodeLines() throws {
        let world = try RemoteWorld()
        let url = "https://127.0.0.1:\(try SilentListener.closedPort())"
        let log = try SyslogCapture(world.box)
        let safe = try world.ignoreProbe("safe", world.arguments(url, ["failmode=safe"]))
        _ = try log.login(world.box, safe, "root", ["123456"])
        let secure = try world.box.service("secure", world.arguments(url), stateDirectory: world.hostState)
        _ = try log.login(world.box, secure, "root", ["123456"])
        let lines = log.lines()
        #expect(lines.contains { $0.hasPrefix(Self.priority(LOG_WARNING)) && $0.contains("unavailable during preflight")
                && $0.hasSuffix("failmode=safe: root passes without a second factor") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix(Self.priority(LOG_ERR)) && $0.hasSuffix("denying root (failmode=secure)") }, "\(lines)")
    }

    @Test("A revoked credential is a LOG_ERR line telling the admin what to do")
    func revokedCredentialLine() throws {
        let world = try RemoteWorld()
        _ = try world.enroll("root", ["--hotp"])
        let validator = try world.start()
        #expect(try world.cli(["host", "revoke", "web1"]).status == 0)
        let log = try SyslogCapture(world.box)
        let service = try world.service("revoked", validator, ["failmode=safe"])
        let login = try log.login(world.box, service, "root", ["123456"])
        #expect(login.status == PAM.authInfoUnavailable, "\(login)")
        let lines = log.lines()
        #expect(lines.contains { $0.hasPrefix(Self.priority(LOG_ERR)) && $0.contains("refused this host's credential")
                && $0.contains("securotp host add NAME --output FILE") && $0.contains(world.credential) }, "\(lines)")
    }
}
