import Foundation
import Hummingbird
@testable import SecurOTPServer
import SecurOTPService
import Testing

/// What an attacker's review (issue 12) found in the validator's API: a host's scope told
/// apart at preflight, hostile user names stored and printed raw, unbounded request bodies,
/// metrics and the exact version for anyone who can reach the port.
@Suite("Validator API: attack review")
struct AttackReviewAPITests {
    /// A host that may verify erin only; returns its credential.
    static func kiosk(_ client: APIClient, _ fixture: ValidatorFixture) async throws -> String {
        let created = try await client.call(.post, "/v1/hosts", ["name": "kiosk", "users": ["erin"]], bearer: fixture.admin)
        return try #require(created.string("credential"), "\(created.text)")
    }

    @Test("Out of a host's scope: preflight answers as for an enrolled user, verify rejects like a wrong code, both audited",
          arguments: Backend.tested)
    func scopeLooksLikeAWrongCode(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let kiosk = try await Self.kiosk(client, fixture)
            _ = try await HostAPITests.enroll(client, fixture, "erin")
            let (frankSecret, _) = try await HostAPITests.enroll(client, fixture, "frank")
            let own = try await client.call(.post, "/v1/preflight", ["user": "erin"], bearer: kiosk)
            for user in ["frank", "nobody-here"] {
                let preflight = try await client.call(.post, "/v1/preflight", ["user": user], bearer: kiosk)
                #expect(preflight.status == 200 && preflight.text == own.text, "\(user): \(preflight.text) vs \(own.text)")
                let verify = try await client.call(.post, "/v1/verify", ["user": user, "passcode": "123456"], bearer: kiosk)
                #expect(verify.status == 200 && verify.string("result") == "reject", "\(user): \(verify.text)")
                #expect(verify["failures"] == nil && verify["info"] == nil && verify["error"] == nil, "\(verify.text)")
            }
            let audit = try await client.call(.get, "/v1/audit?user=frank", bearer: fixture.admin)
            let entries = try #require(audit["entries"] as? [[String: Any]])
            #expect(entries.filter { $0["result"] as? String == "denied" && $0["actor"] as? String == "kiosk" }.count == 2, "\(audit.text)")
            for _ in 1...6 { try await client.call(.post, "/v1/verify", ["user": "frank", "passcode": "000000"], bearer: kiosk) }
            let unscoped = try await client.call(.post, "/v1/verify", ["user": "frank", "passcode": Codes.totp(frankSecret)], bearer: fixture.host)
            #expect(unscoped.string("result") == "accept", "an out-of-scope host cannot lock a user out: \(unscoped.text)")
        }
    }

    @Test("Hostile user names: refused before the audit log, recorded as a short escaped excerpt; bodies are bounded",
          arguments: Backend.tested)
    func hostileNames(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let kiosk = try await Self.kiosk(client, fixture)
            let hostile = "\u{1b}]0;owned\u{07}\u{1b}[31m\u{202e}root\nFAKE"
            for bearer in [kiosk, fixture.host] {
                let answer = try await client.call(.post, "/v1/preflight", ["user": hostile], bearer: bearer)
                #expect(answer.status == 400, "\(answer.text)")
                #expect(!answer.text.contains("\\u001b") && !answer.text.contains("\u{202e}"), "the error echoes the raw name: \(answer.text)")
            }
            let big = try await client.call(.post, "/v1/verify", ["user": String(repeating: "a", count: 1_000_000), "passcode": "1"], bearer: kiosk)
            #expect(big.status == 413, "a host request body is bounded: \(big.status) \(big.text.prefix(200))")
            let audit = try await client.call(.get, "/v1/audit?limit=100", bearer: fixture.admin)
            let entries = try #require(audit["entries"] as? [[String: Any]])
            #expect(!entries.isEmpty, "invalid names are audited: \(audit.text)")
            for entry in entries {
                for (key, value) in entry {
                    guard let text = value as? String else { continue }
                    #expect(text.utf8.count <= 512, "\(key): \(text.utf8.count) bytes")
                    #expect(!text.unicodeScalars.contains { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) || $0.value == 0x202e },
                            "\(key) holds a control character: \(text.debugDescription)")
                }
            }
            #expect(audit.text.utf8.count < 8 * 1024, "\(audit.text.utf8.count) bytes")
        }
    }

    @Test("Logs escape what callers sent: controls, DEL, C1 and bidi controls become visible escapes")
    func logfmtEscapes() {
        let quoted = LogfmtHandler.quote("/v1/\u{1b}[31m\u{9b}2J\u{7f}\u{202e}\u{2066}x")
        #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) || $0.value == 0x202e || $0.value == 0x2066 },
                "\(quoted.debugDescription)")
        #expect(quoted.contains("\\x1b") && quoted.contains("\\u{202e}"), "\(quoted)")
    }

    @Test("Health without a credential: status only; with an admin credential: version and store")
    func healthHidesVersion() async throws {
        let fixture = try await ValidatorFixture.make(.sqlite)
        try await fixture.withClient { client in
            let anonymous = try await client.call(.get, "/v1/health")
            #expect(anonymous.status == 200 && anonymous.string("status") == "ok", "\(anonymous.text)")
            #expect(anonymous["version"] == nil && anonymous["store"] == nil, "\(anonymous.text)")
            let admin = try await client.call(.get, "/v1/health", bearer: fixture.admin)
            #expect(admin.string("version") != nil && admin.string("store") == "sqlite", "\(admin.text)")
            let host = try await client.call(.get, "/v1/health", bearer: fixture.host)
            #expect(host["version"] == nil, "\(host.text)")
        }
    }

    @Test("Health: 503 when the store is gone (the node's PostgreSQL database dropped under it), so a load balancer drops the node", .needsPostgreSQL)
    func healthWithoutStore() async throws {
        // The default deadline: a dropped database does not fail the check at once, the pool
        // keeps trying to connect until the deadline ends it.
        let fixture = try await ValidatorFixture.make(.postgres) { $0.healthTimeoutSeconds = 2 }
        try await fixture.withClient { client in
            try TestPostgres.sql("DROP DATABASE IF EXISTS \(fixture.database ?? "") WITH (FORCE)")
            let gone = try await client.call(.get, "/v1/health")
            #expect(gone.status == 503, "a node without its database answered: \(gone.status) \(gone.text)")
            let asAdmin = try await client.call(.get, "/v1/health", bearer: fixture.admin)
            #expect(asAdmin.status == 503, "\(asAdmin.text)")
        }
    }

    @Test("Metrics are not served on the API listener by default")
    func metricsNotOnAPI() async throws {
        let fixture = try await ValidatorFixture.make(.sqlite)
        try await fixture.withClient { client in
            let response = try await client.client.execute(uri: "/metrics", method: .get, headers: [:], body: nil)
            #expect(response.status == .notFound, "\(response.status)")
        }
    }

    @Test("metrics_listen: loopback by default, an address of its own, or no; metrics = no still turns metrics off")
    func metricsListenSetting() throws {
        var configuration = DaemonConfiguration()
        #expect(configuration.servedMetricsListen == .tcp(host: "127.0.0.1", port: 8444))
        try configuration.apply(key: "metrics_listen", value: "[::1]:9100", origin: "test")
        #expect(configuration.servedMetricsListen == .tcp(host: "::1", port: 9100))
        try configuration.apply(key: "metrics_listen", value: "no", origin: "test")
        #expect(configuration.servedMetricsListen == nil)
        try configuration.apply(key: "metrics_listen", value: "unix:/run/securotpd-metrics.sock", origin: "test")
        try configuration.apply(key: "metrics", value: "no", origin: "test")
        #expect(configuration.servedMetricsListen == nil)
        #expect(throws: ServiceError.self) { try configuration.apply(key: "metrics_listen", value: "everywhere", origin: "test") }
        var shared = DaemonConfiguration()
        try shared.apply(key: "metrics_listen", value: "127.0.0.1:8443", origin: "test")
        let error = #expect(throws: ServiceError.self) { try shared.validate() }
        #expect(error?.message.contains("listener of its own") == true, "\(error?.message ?? "")")
    }
}
