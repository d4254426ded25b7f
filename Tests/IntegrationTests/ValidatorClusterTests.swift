import Foundation
import Testing

/// securotpd processes (the release binary) on one store, hammered with the same valid codes
/// at once: each code is accepted exactly once — across two nodes sharing PostgreSQL, and on
/// one SQLite node that commits several verifications per transaction.
@Suite("Validator nodes: exactly once under concurrent load", .serialized)
struct ValidatorClusterTests {
    /// Rate limits off: the test sends many requests per user and host on purpose.
    static let unlimited = ["rate_limit_host": "0", "rate_limit_user": "0"]

    /// Sends `code` for `user` to every URL at the same moment (one curl each) and returns the
    /// results (accept, reject, ...).
    static func race(_ urls: [String], user: String, code: String, credential: String) throws -> [String] {
        let body = #"{"user":"\#(user)","passcode":"\#(code)"}"#
        let children = try urls.map { url in
            try Run.start("/usr/bin/curl", ["-sS", "--max-time", "20", "-H", "Authorization: Bearer \(credential)",
                                            "-H", "Content-Type: application/json", "-d", body, url + "/v1/verify"])
        }
        return try children.map { child in
            let result = try child.wait()
            guard let data = result.stdout.data(using: .utf8),
                  let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any], let outcome = answer["result"] as? String else {
                throw HarnessError("unexpected answer: \(result)")
            }
            return outcome
        }
    }

    /// Enrolls `count` HOTP users through the CLI and returns (user, secret).
    static func enrollUsers(_ sandbox: Sandbox, count: Int, store: [String]) throws -> [(user: String, secret: String)] {
        try (0..<count).map { index in
            let user = "cluster\(index)"
            let result = try sandbox.cli(store + ["enroll", user, "--hotp", "--format", "json"])
            guard result.status == 0, let data = result.stdout.data(using: .utf8) else { throw HarnessError("\(result)") }
            return (user, try JSONDecoder().decode(Enrollment.self, from: data).secret)
        }
    }

    static func hostCredential(_ sandbox: Sandbox, store: [String]) throws -> String {
        let file = sandbox.root + "/host.cred"
        let added = try sandbox.cli(store + ["host", "add", "loadtest", "--output", file])
        guard added.status == 0 else { throw HarnessError("\(added)") }
        return try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Rounds of `users` races in parallel: every code must have exactly one accept.
    static func hammer(_ urls: [String], users: [(user: String, secret: String)], rounds: Int, credential: String) throws {
        for round in 0..<rounds {
            let codes = try users.map { try Oath.hotp($0.secret, counter: UInt64(round)) }
            let results = try users.indices.map { index in
                try race(urls, user: users[index].user, code: codes[index], credential: credential)
            }
            for (index, outcomes) in results.enumerated() {
                #expect(outcomes.filter { $0 == "accept" }.count == 1, "round \(round), \(users[index].user): \(outcomes)")
                #expect(outcomes.allSatisfy { $0 == "accept" || $0 == "reject" }, "\(outcomes)")
            }
        }
    }

    @Test("Two securotpd nodes on one PostgreSQL database: each code accepted exactly once, over 240 races")
    func twoNodesOnPostgreSQL() throws {
        let sandbox = try Sandbox()
        let database = "securotp_it_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        try TestPostgres.sql("CREATE DATABASE \(database)")
        defer { try? TestPostgres.sql("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
        let url = TestPostgres.url(database: database)
        // The key file every node shares comes from a local store made for the purpose.
        #expect(try sandbox.cli(["--state-dir", sandbox.state, "binding-id", "root"]).status == 0)
        let store = ["--database", url, "--store-key", sandbox.state + "/securotp.key"]
        let users = try Self.enrollUsers(sandbox, count: 12, store: store)
        let credential = try Self.hostCredential(sandbox, store: store)

        let settings = Self.unlimited.merging(["database": url]) { $1 }
        let first = try Validator(sandbox, state: sandbox.state, settings: settings, pki: nil)
        let second = try Validator(sandbox, state: sandbox.state, settings: settings, pki: nil)
        try Self.hammer([first.url, second.url, first.url, second.url], users: users, rounds: 20, credential: credential)
        for node in [first, second] {
            let stopped = try node.stop()
            #expect(stopped.status == 0, "\(stopped)")
            #expect(stopped.stderr.contains("securotpd stopped"))
        }
        let audit = try sandbox.cli(store + ["audit", "cluster0", "--limit", "200", "--format", "json"])
        let entries = try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(entries.filter { $0["result"] as? String == "accept" }.count == 20, "one accept per round in the shared audit log")
    }

    @Test("One securotpd on SQLite: concurrent identical codes, one accept each (group commit keeps exactly-once)")
    func oneNodeOnSQLite() throws {
        let sandbox = try Sandbox()
        let store = ["--state-dir", sandbox.state]
        let users = try Self.enrollUsers(sandbox, count: 12, store: store)
        let credential = try Self.hostCredential(sandbox, store: store)
        let node = try Validator(sandbox, state: sandbox.state, settings: Self.unlimited, pki: nil)
        try Self.hammer([node.url, node.url, node.url], users: users, rounds: 20, credential: credential)
        let stopped = try node.stop()
        #expect(stopped.status == 0, "\(stopped)")
    }
}

/// The PostgreSQL server the tests use (scripts/postgres-test.sh starts one).
enum TestPostgres {
    static var server: String {
        ProcessInfo.processInfo.environment["SECUROTP_TEST_POSTGRES"] ?? "postgres://securotp:securotp-test@127.0.0.1:5432/postgres"
    }

    static func url(database: String) -> String {
        guard var components = URLComponents(string: server) else { return server }
        components.path = "/" + database
        return components.string ?? server
    }

    static func sql(_ statement: String) throws {
        let result = try Run.run("/usr/bin/psql", [server, "-qAtc", statement])
        guard result.status == 0 else { throw HarnessError("psql \(statement): \(result.stderr) (scripts/postgres-test.sh starts PostgreSQL)") }
    }
}
