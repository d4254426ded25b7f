// Only the admin side creates or migrates a store (issue 12 §3): the module takes the database
// as it is, and a database without this build's schema — a zero-length file after a failed
// restore or a full disk, or one an upgrade has not migrated yet — fails closed, with a syslog
// line that names the file and the fix, also under nullok.
import Foundation
import Glibc
import Testing

@Suite("The module never creates or migrates a store")
struct StoreSchemaTests {
    /// authpriv (10 << 3) plus the level.
    static func priority(_ level: Int32) -> String { "<\(80 + level)>" }

    /// One login; through SyslogCapture (and its lines) where the machine allows it.
    static func login(_ box: Sandbox, _ service: String, _ user: String, _ responses: [String]) throws -> (ProcessResult, [String]?) {
        guard SyslogCapture.available else { return (try box.login(service, user, responses), nil) }
        let log = try SyslogCapture(box)
        let result = try log.login(box, service, user, responses)
        return (result, log.lines())
    }

    static func size(_ path: String) throws -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { throw HarnessError("stat \(path): \(String(cString: strerror(errno)))") }
        return Int64(info.st_size)
    }

    static func userVersion(_ database: String) throws -> String {
        let result = try Run.run(try Tools.sqlite3(), [database, "PRAGMA user_version"])
        guard result.status == 0 else { throw HarnessError("sqlite3 failed: \(result)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("A zero-length securotp.db with nullok: PAM_AUTHINFO_UNAVAIL and a log line naming the file and the fix; nobody adopts it")
    func zeroLengthDatabaseWithNullok() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let database = box.state + "/securotp.db"
        // What a failed restore leaves: the database file, empty, and no WAL beside it.
        for suffix in ["-wal", "-shm"] { unlink(database + suffix) }
        try #require(truncate(database, 0) == 0)
        let service = try box.ignoreProbe("nullok", ["nullok"])

        let (login, lines) = try Self.login(box, service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(login.status == PAM.authInfoUnavailable, "an empty store must not let nullok skip the code: \(login)")
        #expect(login.prompts.isEmpty, "\(login)")
        if let lines {
            #expect(lines.contains { $0.hasPrefix(Self.priority(LOG_ERR)) && $0.contains(database) && $0.contains("restore it from backup")
                        && $0.contains("securotp --state-dir \(box.state) enroll") }, "\(lines)")
        }
        #expect(try Self.size(database) == 0, "the module wrote a schema into the empty file")

        // The admin CLI does not adopt it either: no command turns it into an empty store.
        for command in [["list"], ["status"], ["enroll", "root", "--format", "json"]] {
            let cli = try box.cli(command)
            #expect(cli.status == 65, "\(command): \(cli)")
            #expect(cli.stderrLines.count == 1 && cli.stderr.contains(database), "\(command): \(cli)")
        }
        #expect(try Self.size(database) == 0, "the CLI wrote a schema into the empty file")
    }

    @Test("A database at an older schema version: refused by the module (logged with the fix), migrated by the CLI")
    func olderSchemaVersion() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let database = box.state + "/securotp.db"
        let sqlite = try Tools.sqlite3()
        // Back to version 3: drop what the later migrations added (tables only; versions 1–3
        // made users, tokens, recovery_codes and wal_restart).
        let later = try Run.run(sqlite, [database, """
            SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
            AND name NOT IN ('users', 'tokens', 'recovery_codes', 'wal_restart')
            """])
        try #require(later.status == 0 && !later.lines.isEmpty, "\(later)")
        let downgrade = try Run.run(sqlite, [database, later.lines.map { "DROP TABLE \($0);" }.joined() + "PRAGMA user_version = 3;"])
        try #require(downgrade.status == 0, "\(downgrade)")
        let service = try box.service()
        let code = try Oath.hotp(token.secret, counter: 0)

        let (refused, lines) = try Self.login(box, service, "root", [code])
        #expect(refused.status == PAM.authInfoUnavailable, "\(refused)")
        #expect(refused.prompts.isEmpty, "\(refused)")
        if let lines {
            #expect(lines.contains { $0.hasPrefix(Self.priority(LOG_ERR)) && $0.contains(database) && $0.contains("schema version 3")
                        && $0.contains("securotp --state-dir \(box.state) status") }, "\(lines)")
        }
        #expect(try Self.userVersion(database) == "3", "the module migrated the database")

        let status = try box.cli(["status"])
        #expect(status.status == 0, "\(status)")
        #expect(try Int(Self.userVersion(database)) ?? 0 > 3, "the CLI migrates")
        let login = try box.login(service, "root", [code])
        #expect(login.status == PAM.success, "after the CLI's migration the code works: \(login)")
    }

    @Test("doctor calls a store with no tokens whose database is younger than its key file suspicious")
    func doctorFlagsAnEmptyStoreYoungerThanItsKey() throws {
        let box = try Sandbox()
        let pamDirectory = box.path("doctor.d")
        try #require(mkdir(pamDirectory, 0o755) == 0)
        let sshdConfig = box.path("sshd_config")
        try box.write("UsePAM yes\nKbdInteractiveAuthentication yes\n", to: sshdConfig)
        func suspicious() throws -> [String] {
            let doctor = try box.cli(["doctor", "--pam-dir", pamDirectory, "--sshd-config", sshdConfig])
            return doctor.lines.filter { $0.hasPrefix("warning") && $0.contains("no tokens") && $0.contains("younger than its key file") }
        }
        // A new store (database and key made together) with no token yet is not suspicious.
        let made = try box.cli(["binding-id", "root"])
        try #require(made.status == 0, "\(made)")
        #expect(try suspicious().isEmpty)

        // The same store with a key file a day older than the database: the database was made
        // again (or replaced by an empty one) under a key that had sealed seeds before.
        let key = box.state + "/securotp.key"
        let dayAgo = Int(Date().timeIntervalSince1970) - 86_400
        var times = [timeval(tv_sec: dayAgo, tv_usec: 0), timeval(tv_sec: dayAgo, tv_usec: 0)]
        try #require(utimes(key, &times) == 0)
        let flagged = try suspicious()
        #expect(flagged.count == 1 && flagged.first?.contains(box.state + "/securotp.db") == true, "\(flagged)")

        // With a token it is an ordinary store again.
        _ = try box.enroll("root")
        #expect(try suspicious().isEmpty)
    }

    @Test("A PostgreSQL schema version outside the known ones: securotpd refuses it with a message (it indexed its migrations with it)")
    func negativePostgresSchemaVersion() throws {
        let box = try Sandbox()
        let made = try box.cli(["binding-id", "root"]) // the key file securotpd loads
        try #require(made.status == 0, "\(made)")
        let database = "securotp_it_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        try TestPostgres.sql("CREATE DATABASE \(database)")
        defer { try? TestPostgres.sql("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
        let url = TestPostgres.url(database: database)
        let damaged = try Run.run("/usr/bin/psql", [url, "-qAtc",
                                                   "CREATE TABLE securotp_schema (version INTEGER NOT NULL); INSERT INTO securotp_schema VALUES (-1)"])
        try #require(damaged.status == 0, "\(damaged)")
        let daemon = try Run.run(try Binaries.securotpd(), ["--state-dir", box.state, "--database", url, "--check-config"])
        #expect(daemon.status != 0 && daemon.status < 128, "failed closed, not by a signal: \(daemon)")
        #expect(daemon.stderr.contains("schema -1"), "\(daemon)")
    }
}
