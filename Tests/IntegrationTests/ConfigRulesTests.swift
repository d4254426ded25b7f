// Configuration rules from issue 12 §7: a key given twice is an error naming both places (never
// "last one wins"), and an error quotes an outside value only as a short, escaped excerpt.
import Foundation
import Glibc
import Testing

@Suite("Configuration: keys given twice, values quoted in errors")
struct ConfigRulesTests {
    @Test("nullok = no, then nullok = yes in securotp.conf: PAM_SERVICE_ERR and a log line naming both lines; the CLI exits 78")
    func keyTwiceInTheFile() throws {
        let box = try Sandbox()
        let made = try box.cli(["binding-id", "root"]) // a store in which root has no token
        try #require(made.status == 0, "\(made)")
        let service = try box.ignoreProbe("twice", [])
        let config = box.state + "/securotp.conf"
        try box.writeConfig("# second factor for everyone\nnullok = no\ndeny = 3\nnullok = yes\n")

        let (login, lines) = try StoreSchemaTests.login(box, service, "root", ["123456"])
        #expect(login.status == PAM.serviceError, "last one must not win: \(login)")
        #expect(login.prompts.isEmpty, "\(login)")
        if let lines {
            #expect(lines.contains { $0.hasPrefix(StoreSchemaTests.priority(LOG_ERR)) && $0.contains("\(config):4") && $0.contains("line 2")
                        && $0.contains("nullok") }, "\(lines)")
        }

        let cli = try box.cli(["list"])
        #expect(cli.status == 78, "\(cli)")
        #expect(cli.stderrLines.count == 1 && cli.stderr.contains("\(config):4") && cli.stderr.contains("line 2"), "\(cli)")
    }

    @Test("A key twice in the module arguments is PAM_SERVICE_ERR", arguments: [["nullok", "nullok=no"], ["deny=5", "deny=0"]])
    func keyTwiceInTheArguments(_ arguments: [String]) throws {
        let box = try Sandbox()
        let made = try box.cli(["binding-id", "root"])
        try #require(made.status == 0, "\(made)")
        let service = try box.ignoreProbe("twice-arguments", arguments)
        let login = try box.login(service, "root", ["123456"])
        #expect(login.status == PAM.serviceError, "\(arguments): \(login)")
        #expect(login.prompts.isEmpty, "\(login)")
    }

    @Test("A module argument overrides the same key in the file (documented, unchanged)")
    func argumentOverridesTheFile() throws {
        let box = try Sandbox()
        let made = try box.cli(["binding-id", "root"])
        try #require(made.status == 0, "\(made)")
        try box.writeConfig("nullok = no\n")
        let service = try box.ignoreProbe("override", ["nullok"])
        let login = try box.login(service, "root", ["123456"])
        #expect(login.status == PAM.ignoreProbeExit && login.infos.contains(PAM.ignoreProbeInfo), "\(login)")
    }

    /// 60 KB of value: terminal escapes (a title change, a colour, a C1 CSI, a backspace) and
    /// bidi overrides around it.
    static let hostileValue = "\u{1b}]0;owned\u{07}\u{1b}[31m\u{202E}" + String(repeating: "9", count: 60_000) + "\u{2066}\u{08}\u{9b}2J"

    static func check(_ text: String, _ what: String) {
        #expect(text.utf8.count < 400, "\(what): \(text.utf8.count) bytes")
        #expect(!text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7f...0x9f).contains($0.value) || (0x202a...0x202e).contains($0.value)
                    || (0x2066...0x2069).contains($0.value) }, "\(what) has raw control characters: \(text.debugDescription)")
        #expect(text.contains("\\x1b"), "\(what) shows the escape as \\x1b: \(text.debugDescription)")
    }

    @Test("A 60 KB value with escape sequences: the module's log line, the CLI's and securotpd's errors are short and escaped")
    func longHostileValue() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service()
        try box.writeConfig("deny = " + Self.hostileValue + "\n")

        let (login, lines) = try StoreSchemaTests.login(box, service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(login.status == PAM.serviceError, "\(login)")
        if let lines {
            let logged = lines.filter { $0.contains("securotp.conf:1") }
            #expect(logged.count == 1, "\(lines.map { String($0.prefix(200)) })")
            for line in logged { Self.check(line, "the module's log line") }
        }

        let cli = try box.cli(["list"])
        #expect(cli.status == 78, "\(cli.status)")
        Self.check(cli.stderr, "the CLI's error")

        let daemonConfig = box.path("securotpd.conf")
        try box.write("rate_limit_host = " + Self.hostileValue + "\n", to: daemonConfig, mode: 0o600)
        let daemon = try Run.run(try Binaries.securotpd(), ["--config", daemonConfig, "--state-dir", box.state, "--check-config"])
        #expect(daemon.status == 78, "\(daemon.status)")
        Self.check(daemon.stderr, "securotpd's error")
    }

    @Test("securotpd.conf: a key given twice stops the daemon naming both lines")
    func daemonKeyTwice() throws {
        let box = try Sandbox()
        _ = try box.enroll("root")
        let daemonConfig = box.path("securotpd.conf")
        try box.write("listen = 127.0.0.1:0\nrate_limit_user = 30\nrate_limit_user = 0\n", to: daemonConfig, mode: 0o600)
        let daemon = try Run.run(try Binaries.securotpd(), ["--config", daemonConfig, "--state-dir", box.state, "--check-config"])
        #expect(daemon.status == 78, "\(daemon)")
        #expect(daemon.stderr.contains("\(daemonConfig):3") && daemon.stderr.contains("line 2"), "\(daemon)")
    }
}
