import Foundation
import Testing

/// `securotp --server`: the same commands, output and exit codes as against the local store.
/// The validator runs on a state directory the local CLI reads too (SQLite allows both), so
/// both views of one store can be compared line by line.
@Suite("securotp --server against a real securotpd")
struct RemoteCLITests {
    @Test("Remote and local runs of the same commands print the same and exit the same")
    func sameOutput() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.cli(["--state-dir", sandbox.state, "binding-id", "root"]).status == 0)
        let adminFile = sandbox.root + "/admin.cred"
        #expect(try sandbox.cli(["--state-dir", sandbox.state, "admin", "add", "ops", "--output", adminFile]).status == 0)
        let node = try Validator(sandbox, state: sandbox.state, pki: nil)
        let local = ["--state-dir", sandbox.state]
        let remote = ["--server", node.url, "--credential", adminFile]

        let enrolled = try sandbox.cli(remote + ["enroll", "alice", "--hotp", "--format", "json"])
        #expect(enrolled.status == 0, "\(enrolled)")
        let enrollment = try JSONDecoder().decode(Enrollment.self, from: Data(enrolled.stdout.utf8))
        #expect(try sandbox.cli(remote + ["nickname", "alice", enrollment.serial, "desk"]).status == 0)
        let codes = try sandbox.cli(remote + ["recovery-codes", "alice", "--count", "2"])
        #expect(codes.status == 0 && codes.lines.count == 3, "\(codes)")
        let resynced = try sandbox.cli(remote + ["resync", "alice", enrollment.serial,
                                                 try Oath.hotp(enrollment.secret, counter: 30), try Oath.hotp(enrollment.secret, counter: 31)])
        #expect(resynced.stdout.contains("next counter 32"), "\(resynced)")

        for command in [["list"], ["list", "alice", "--format", "json"], ["binding-id", "alice"], ["audit", "alice", "--format", "json"]] {
            let mine = try sandbox.cli(local + command), theirs = try sandbox.cli(remote + command)
            #expect(mine.status == 0 && theirs.status == 0, "\(mine)\n\(theirs)")
            #expect(mine.stdout == theirs.stdout, "\(command): local and remote output differ\n\(mine)\n\(theirs)")
        }
        for (command, status) in [(["delete", "alice", "0000000000"], Int32(67)), (["nickname", "alice", enrollment.serial, String(repeating: "n", count: 40)], 65),
                                  (["enroll", "bad:name"], 65)] {
            let mine = try sandbox.cli(local + command), theirs = try sandbox.cli(remote + command)
            #expect(mine.status == status && theirs.status == status, "\(command): \(mine)\n\(theirs)")
            #expect(mine.stderr == theirs.stderr, "\(command): the messages differ\n\(mine.stderr)\(theirs.stderr)")
        }
        // A host credential cannot manage tokens; a wrong one cannot do anything.
        let hostFile = sandbox.root + "/host.cred"
        #expect(try sandbox.cli(local + ["host", "add", "web1", "--output", hostFile]).status == 0)
        let asHost = try sandbox.cli(["--server", node.url, "--credential", hostFile, "list"])
        #expect(asHost.status == 77 && asHost.stderrLines.count == 1, "\(asHost)")
        #expect(try sandbox.cli(local + ["admin", "revoke", "ops"]).status == 0)
        let revoked = try sandbox.cli(remote + ["list"])
        #expect(revoked.status == 77 && revoked.stderr.contains("revoked"), "\(revoked)")
    }

    @Test("securotpd: a database URL with a repeated, unknown or unparsable part is a configuration error that hides the password")
    func databaseURLErrors() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.cli(["binding-id", "root"]).status == 0)
        func check(_ url: String) throws -> ProcessResult {
            try Run.run(try Binaries.path("securotpd"), ["--state-dir", sandbox.state, "--database", url, "--check-config"])
        }
        // Nothing listens on port 1: each of these must fail before any connection is tried.
        let twice = try check("postgres://securotp:hunter2pw@127.0.0.1:1/db?sslmode=disable&sslmode=disable")
        #expect(twice.status == 78 && twice.stderr.contains("sslmode given twice"), "a repeated parameter crashed securotpd: \(twice)")
        let unknown = try check("postgres://securotp:hunter2pw@127.0.0.1:1/db?sslmod=require")
        #expect(unknown.status == 78 && unknown.stderr.contains("unknown parameter \"sslmod\""), "\(unknown)")
        let unparsable = try check("postgres://securotp:hunter2pw@bad host:1/db")
        #expect(unparsable.status == 78 && unparsable.stderr.contains("expected postgres://"), "\(unparsable)")
        for result in [twice, unknown, unparsable] {
            #expect(!result.stderr.contains("hunter2pw") && !result.stdout.contains("hunter2pw"), "the password was printed: \(result)")
        }
    }

    @Test("Two securotpd on one machine: a taken default metrics port costs a warning; a taken metrics_listen names the setting")
    func metricsListenerTaken() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.cli(["binding-id", "root"]).status == 0)
        let holder = try SilentListener()
        let config = sandbox.root + "/securotpd.conf"
        try sandbox.write("metrics_listen = 127.0.0.1:\(holder.port)\n", to: config, mode: 0o600)
        let taken = try Run.run(try Binaries.path("securotpd"), ["--config", config, "--state-dir", sandbox.state, "--listen", "127.0.0.1:0", "--check-config"])
        #expect(taken.status == 78 && taken.stderr.contains("metrics_listen = 127.0.0.1:\(holder.port)") && taken.stderr.contains("in use"),
                "\(taken)")
        // The default port held (by another node, or by this test): the node starts all the same.
        let defaultHolder = try? SilentListener(port: 8444)
        let empty = sandbox.root + "/empty.conf"
        try sandbox.write("rate_limit_user = 0\n", to: empty, mode: 0o600)
        let node = try Run.start(try Binaries.path("securotpd"), ["--config", empty, "--state-dir", sandbox.state, "--listen", "127.0.0.1:0"])
        let deadline = Date().addingTimeInterval(30)
        while !node.errorOutput.contains("securotpd listening"), !node.errorOutput.contains("securotpd: "), Date() < deadline { usleep(20_000) }
        kill(node.pid, SIGTERM)
        let ended = try node.wait(timeout: 30)
        #expect(ended.stderr.contains("securotpd listening") && ended.stderr.contains("metrics_listen (default 127.0.0.1:8444) is in use"),
                "a second node stopped at the default metrics port: \(ended)")
        withExtendedLifetime(defaultHolder) {}
    }

    @Test("securotpd --check-config: a summary and 0 for a good configuration, 78 naming file:line for a bad one")
    func checkConfig() throws {
        let sandbox = try Sandbox()
        // securotpd never creates a store (an empty one would let every host's nullok skip the
        // code): a missing one stops it, naming the database; the admin CLI makes it.
        let missing = try Run.run(try Binaries.path("securotpd"), ["--state-dir", sandbox.state, "--check-config"])
        #expect(missing.status == 66 && missing.stderr.contains(sandbox.state) && missing.stderr.contains("securotp enroll"), "\(missing)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.state + "/securotp.db"))
        #expect(try sandbox.cli(["binding-id", "root"]).status == 0)
        let good = try Run.run(try Binaries.path("securotpd"), ["--state-dir", sandbox.state, "--check-config"])
        #expect(good.status == 0 && good.stdout.contains("configuration is valid") && good.stdout.contains("sqlite"), "\(good)")
        let config = sandbox.root + "/securotpd.conf"
        try sandbox.write("listen = 127.0.0.1:8443\nrate_limit_host = lots\n", to: config, mode: 0o600)
        let bad = try Run.run(try Binaries.path("securotpd"), ["--config", config, "--state-dir", sandbox.state, "--check-config"])
        #expect(bad.status == 78 && bad.stderr.contains("securotpd.conf:2: rate_limit_host"), "\(bad)")
        let open = try Run.run(try Binaries.path("securotpd"), ["--listen", "0.0.0.0:8443", "--state-dir", sandbox.state, "--check-config"])
        #expect(open.status == 78 && open.stderr.contains("plain HTTP"), "\(open)")
    }
}
