import Foundation
import Hummingbird
import HummingbirdTesting
import SecurOTPServer
import SecurOTPService
import SecurOTPStore
import Testing

/// What a host sees: the same decisions as the local store, exactly once, with locks,
/// challenges, scopes and rate limits.
@Suite("Validator API: host verification")
struct HostAPITests {
    /// Enrolls a token for `user` through the admin API and returns its secret and serial.
    static func enroll(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String, _ body: [String: Any] = [:]) async throws -> (secret: String, serial: String) {
        let answer = try await client.call(.post, "/v1/users/\(user)/tokens", body, bearer: fixture.admin)
        #expect(answer.status == 201, "\(answer.text)")
        let token = try #require(answer["token"] as? [String: Any])
        return (try #require(answer.string("secret")), try #require(token["serial"] as? String))
    }

    @Test("A right TOTP code is accepted once; the replay and a wrong code are rejected, with counts", arguments: Backend.tested)
    func acceptedExactlyOnce(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, serial) = try await Self.enroll(client, fixture, "alice")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflight["has_tokens"] as? Bool == true && preflight["code_digits"] as? [Int] == [6], "\(preflight.text)")

            let code = Codes.totp(secret)
            let accepted = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": code], bearer: fixture.host)
            #expect(accepted.string("result") == "accept" && accepted.string("serial") == serial, "\(accepted.text)")

            let replayed = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": code], bearer: fixture.host)
            #expect(replayed.string("result") == "reject", "\(replayed.text)")
            #expect(replayed.string("info") == "That code was already used. Wait for the next one.")
            #expect(replayed.string("reason")?.hasPrefix("replayed") == true)
            #expect([accepted.string("outcome"), replayed.string("outcome")] == ["accepted", "replayed"], "typed, not read from the reason")

            let wrong = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.wrongTOTP(secret)], bearer: fixture.host)
            #expect(wrong.string("result") == "reject" && wrong["failures"] as? Int == 2, "\(wrong.text)")
            #expect(wrong.string("outcome") == "rejected")
        }
    }

    @Test("deny=3 locks after three failures; even the right code is then 'locked' until an admin unlocks", arguments: Backend.tested)
    func lockout(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.store.policy.deny = 3 }
        try await fixture.withClient { client in
            let (secret, _) = try await Self.enroll(client, fixture, "bob")
            let wrong = Codes.wrongTOTP(secret)
            var last: APIClient.Answer?
            for _ in 1...3 {
                last = try await client.call(.post, "/v1/verify", ["user": "bob", "passcode": wrong], bearer: fixture.host)
            }
            #expect(last?["locked_now"] as? Bool == true, "\(last?.text ?? "")")
            let locked = try await client.call(.post, "/v1/verify", ["user": "bob", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(locked.string("result") == "locked", "\(locked.text)")

            let unlock = try await client.call(.post, "/v1/users/bob/unlock", bearer: fixture.admin)
            #expect(unlock["was_locked"] as? Bool == true)
            let accepted = try await client.call(.post, "/v1/verify", ["user": "bob", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "\(accepted.text)")
        }
    }

    @Test("HOTP far ahead: a next_code challenge; the following code settles it; an unknown challenge is refused", arguments: Backend.tested)
    func nextCodeChallenge(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, _) = try await Self.enroll(client, fixture, "carol", ["kind": "hotp"])
            let ahead = try await client.call(.post, "/v1/verify", ["user": "carol", "passcode": Codes.hotp(secret, counter: 30)], bearer: fixture.host)
            #expect(ahead.string("result") == "challenge", "\(ahead.text)")
            let challenge = try #require(ahead["challenge"] as? [String: Any])
            #expect(challenge["kind"] as? String == "next_code")
            #expect(challenge["prompt"] as? String == "Wait for the code on your token to change, then enter the new code: ")
            let id = try #require(challenge["id"] as? String)

            let stranger = try await client.call(.post, "/v1/verify/answer", ["user": "carol", "challenge_id": "00", "answer": "123456"], bearer: fixture.host)
            #expect(stranger.string("result") == "reject", "\(stranger.text)")

            let next = try await client.call(.post, "/v1/verify/answer",
                                             ["user": "carol", "challenge_id": id, "answer": Codes.hotp(secret, counter: 31)], bearer: fixture.host)
            #expect(next.string("result") == "accept", "\(next.text)")
            let again = try await client.call(.post, "/v1/verify/answer",
                                              ["user": "carol", "challenge_id": id, "answer": Codes.hotp(secret, counter: 32)], bearer: fixture.host)
            #expect(again.string("result") == "reject", "a challenge is answered once: \(again.text)")
            let following = try await client.call(.post, "/v1/verify", ["user": "carol", "passcode": Codes.hotp(secret, counter: 32)], bearer: fixture.host)
            #expect(following.string("result") == "accept", "the counter moved to 32: \(following.text)")
        }
    }

    @Test("pin require: new_pin challenge, the PIN rules, then a passcode made with the new PIN", arguments: Backend.tested)
    func newPINChallenge(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, serial) = try await Self.enroll(client, fixture, "dave", ["kind": "hotp"])
            try await client.call(.post, "/v1/users/dave/tokens/\(serial)/pin/require", bearer: fixture.admin)

            let first = try await client.call(.post, "/v1/verify", ["user": "dave", "passcode": Codes.hotp(secret, counter: 0)], bearer: fixture.host)
            let newPIN = try #require(first["challenge"] as? [String: Any], "\(first.text)")
            #expect(newPIN["kind"] as? String == "new_pin" && newPIN["confirm_prompt"] as? String == "Enter the new PIN again: ")
            let refused = try await client.call(.post, "/v1/verify/answer",
                                                ["user": "dave", "challenge_id": try #require(newPIN["id"] as? String), "answer": "12"], bearer: fixture.host)
            #expect(refused.string("result") == "reject" && refused.string("error")?.hasPrefix("PIN refused") == true, "\(refused.text)")

            let again = try await client.call(.post, "/v1/verify", ["user": "dave", "passcode": Codes.hotp(secret, counter: 1)], bearer: fixture.host)
            let retry = try #require(again["challenge"] as? [String: Any], "\(again.text)")
            let set = try await client.call(.post, "/v1/verify/answer",
                                            ["user": "dave", "challenge_id": try #require(retry["id"] as? String), "answer": "a1b2"], bearer: fixture.host)
            let passcode = try #require(set["challenge"] as? [String: Any], "\(set.text)")
            #expect(passcode["kind"] as? String == "passcode")
            let done = try await client.call(.post, "/v1/verify/answer",
                                             ["user": "dave", "challenge_id": try #require(passcode["id"] as? String),
                                              "answer": "a1b2" + Codes.hotp(secret, counter: 2)], bearer: fixture.host)
            #expect(done.string("result") == "accept", "\(done.text)")
        }
    }

    @Test("Unknown users and users without tokens are rejected like a wrong code, never an error", arguments: Backend.tested)
    func noEnumeration(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let unknown = try await client.call(.post, "/v1/verify", ["user": "nobody-here", "passcode": "123456"], bearer: fixture.host)
            #expect(unknown.status == 200 && unknown.string("result") == "reject", "\(unknown.text)")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "nobody-here"], bearer: fixture.host)
            #expect(preflight["has_tokens"] as? Bool == false)
        }
    }

    @Test("Preflight counts an expired token (nullok must not wave its owner through) but sends no code length for it")
    func expiredTokens() async throws {
        let fixture = try await ValidatorFixture.make(.sqlite)
        try await fixture.withClient { client in
            _ = try await Self.enroll(client, fixture, "olga")
            let database = try SQLiteDatabase(path: fixture.configuration.store.paths.database, create: false)
            try database.execute("UPDATE tokens SET expires = 1 WHERE user = 'olga'")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "olga"], bearer: fixture.host)
            #expect(preflight["has_tokens"] as? Bool == true && preflight["code_digits"] as? [Int] == [], "\(preflight.text)")
        }
    }

    @Test("A host limited to some users is refused for others like a wrong code (AttackReviewAPITests), and the refusal is audited", arguments: Backend.tested)
    func hostScope(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let created = try await client.call(.post, "/v1/hosts", ["name": "kiosk", "users": ["erin"]], bearer: fixture.admin)
            let kiosk = try #require(created.string("credential"), "\(created.text)")
            let allowed = try await client.call(.post, "/v1/verify", ["user": "erin", "passcode": "123456"], bearer: kiosk)
            #expect(allowed.status == 200)
            let refused = try await client.call(.post, "/v1/verify", ["user": "frank", "passcode": "123456"], bearer: kiosk)
            #expect(refused.status == 200 && refused.string("result") == "reject", "\(refused.text)")
            let audit = try await client.call(.get, "/v1/audit?user=frank", bearer: fixture.admin)
            let entries = try #require(audit["entries"] as? [[String: Any]])
            #expect(entries.contains { $0["result"] as? String == "denied" && $0["actor"] as? String == "kiosk" }, "\(audit.text)")
        }
    }

    @Test("Per-user verification rate: over the limit the validator answers 429 with Retry-After")
    func userRateLimit() async throws {
        let fixture = try await ValidatorFixture.make(.sqlite) { $0.userVerificationsPerMinute = 3 }
        try await fixture.withClient { client in
            for _ in 1...3 {
                let answer = try await client.call(.post, "/v1/verify", ["user": "gina", "passcode": "123456"], bearer: fixture.host)
                #expect(answer.status == 200)
            }
            let limited = try await client.call(.post, "/v1/verify", ["user": "gina", "passcode": "123456"], bearer: fixture.host)
            #expect(limited.status == 429 && limited.errorCode == "rate_limited", "\(limited.text)")
            let other = try await client.call(.post, "/v1/verify", ["user": "hank", "passcode": "123456"], bearer: fixture.host)
            #expect(other.status == 200, "the limit is per user")
        }
    }

    @Test("The audit log records verifications without codes; metrics count outcomes", arguments: Backend.tested)
    func auditAndMetrics(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, _) = try await Self.enroll(client, fixture, "ivan")
            let code = Codes.totp(secret)
            try await client.call(.post, "/v1/verify", ["user": "ivan", "passcode": code], bearer: fixture.host)
            try await client.call(.post, "/v1/verify", ["user": "ivan", "passcode": code], bearer: fixture.host)
            let audit = try await client.call(.get, "/v1/audit?user=ivan&limit=10", bearer: fixture.admin)
            let results = (audit["entries"] as? [[String: Any]] ?? []).compactMap { $0["result"] as? String }
            #expect(results == ["reject", "accept", "ok"], "\(audit.text)")
            #expect(!audit.text.contains(code) && !audit.text.contains(secret), "a code or seed in the audit log")

            let metrics = try await Application(router: buildMetricsRouter(fixture.metrics)).test(.router) { metricsClient in
                try await APIClient(client: metricsClient).call(.get, "/metrics")
            }
            #expect(metrics.text.contains("securotpd_verifications_total{result=\"accept\"} 1"), "\(metrics.text)")
            #expect(metrics.text.contains("securotpd_verifications_total{result=\"replay\"} 1"))
            #expect(metrics.text.contains("securotpd_request_duration_seconds_bucket"))
        }
    }
}
