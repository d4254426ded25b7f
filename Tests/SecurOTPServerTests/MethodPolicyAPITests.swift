import Foundation
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import Testing

/// The validator enforces a user's login methods itself (docs/configuration.md, "Login
/// methods"): a host that skips the preflight (or ignores its `methods`) gets, for a method
/// the user may not use, the answer of a user without that credential, and the audit log
/// says why. On SQLite and PostgreSQL.
@Suite("Validator API: login methods enforced by the validator")
struct MethodPolicyAPITests {
    /// Sets `user`'s policy in the fixture's store (SQLite or PostgreSQL), as `securotp policy` does.
    static func setPolicy(_ fixture: ValidatorFixture, _ user: String, _ methods: String) throws {
        _ = try PushAPITests.sql(fixture, """
            INSERT INTO method_policies (subject, methods) VALUES ('\(user)', '\(methods)')
            ON CONFLICT (subject) DO UPDATE SET methods = excluded.methods
            """)
    }

    /// A host "laptop" that keeps 4 offline codes (its credential) and an HOTP token of `user` (its seed).
    static func laptopWithHOTP(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String) async throws -> (laptop: String, secret: String) {
        let created = try await client.call(.post, "/v1/hosts", ["name": "laptop", "offline_codes": 4], bearer: fixture.admin)
        let laptop = try #require(created.string("credential"), "\(created.text)")
        return (laptop, try await HostAPITests.enroll(client, fixture, user, ["kind": "hotp"]).secret)
    }

    /// laptopWithHOTP for alice, and bob with an HOTP token too; one online login of each on the
    /// laptop, so each holds offline codes reserved there. Returns the laptop's credential and
    /// alice's seed (her counter 0 is used).
    static func laptopWithOfflineCodes(_ client: APIClient, _ fixture: ValidatorFixture) async throws -> (laptop: String, secret: String) {
        let (laptop, secret) = try await laptopWithHOTP(client, fixture, "alice")
        let (bobSecret, _) = try await HostAPITests.enroll(client, fixture, "bob", ["kind": "hotp"])
        for (user, seed) in [("alice", secret), ("bob", bobSecret)] {
            let online = try await client.call(.post, "/v1/verify", ["user": user, "passcode": Codes.hotp(seed, counter: 0)], bearer: laptop)
            #expect(online.string("result") == "accept" && online["offline"] != nil, "\(online.text)")
        }
        #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM offline_grants") == "2")
        return (laptop, secret)
    }

    static func clearPolicy(_ fixture: ValidatorFixture, _ user: String) throws {
        _ = try PushAPITests.sql(fixture, "DELETE FROM method_policies WHERE subject = '\(user)'")
    }

    /// The answer without what differs between any two users (none of it says why).
    static func shape(_ answer: APIClient.Answer) -> [String: String] {
        answer.json.mapValues { "\($0)" }
    }

    @Test("/v1/verify refuses a right code of a user whose methods leave out otp, as for a user without a token; counted, audited",
          arguments: Backend.tested)
    func verifyRefusesOTP(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "alice")
            try Self.setPolicy(fixture, "alice", "fido")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflight["methods"] as? [String] == ["fido"], "\(preflight.text)")

            let refused = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.totp(secret)], bearer: fixture.host)
            let tokenless = try await client.call(.post, "/v1/verify", ["user": "nobody-here", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(refused.status == 200 && refused.string("result") == "reject", "\(refused.text)")
            #expect(Self.shape(refused) == Self.shape(tokenless), "a policy is told apart from an empty store: \(refused.text) vs \(tokenless.text)")
            #expect(refused["failures"] as? Int == 1, "counted on the user's own row: \(refused.text)")
            // A recovery code's shape reads no recovery code either.
            let recovery = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": "abcd-efgh-ijkl"], bearer: fixture.host)
            #expect(recovery.string("result") == "reject", "\(recovery.text)")

            let audit = try await client.call(.get, "/v1/audit?user=alice", bearer: fixture.admin)
            #expect(audit.text.contains("otp refused: not among the user's login methods (fido"), "\(audit.text)")

            // The same code, once otp is allowed again: the refusal consumed nothing.
            try Self.setPolicy(fixture, "alice", "fido,otp")
            let accepted = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "\(accepted.text)")
        }
    }

    @Test("methods= on the validator leaves otp out for everyone without a policy of their own; a user's policy may let it back in",
          arguments: Backend.tested)
    func globalMethods(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.store.methods = LoginMethods(parsing: "fido,push") }
        try await fixture.withClient { client in
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "alice")
            let (other, _) = try await HostAPITests.enroll(client, fixture, "bob")
            try Self.setPolicy(fixture, "bob", "otp")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflight["methods"] as? [String] == ["fido", "push"], "\(preflight.text)")
            let refused = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(refused.string("result") == "reject" && refused.string("reason") == "no active token", "\(refused.text)")
            let accepted = try await client.call(.post, "/v1/verify", ["user": "bob", "passcode": Codes.totp(other)], bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "\(accepted.text)")
        }
    }

    @Test("Group policies narrow the methods in the preflight of a host that names the user's groups; they never widen methods=; the user's own policy comes first",
          arguments: Backend.tested)
    func groupsNarrow(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.store.methods = LoginMethods(parsing: "push,otp") }
        try await fixture.withClient { client in
            try Self.setPolicy(fixture, "@contractors", "otp,fido")
            try Self.setPolicy(fixture, "@staff", "fido,push,otp")
            try Self.setPolicy(fixture, "@kiosk", "fido")
            func methods(_ user: String, _ groups: [String]?) async throws -> Any? {
                var body: [String: Any] = ["user": user]
                if let groups { body["groups"] = groups }
                let answer = try await client.call(.post, "/v1/preflight", body, bearer: fixture.host)
                #expect(answer.status == 200, "\(answer.text)")
                return answer["methods"]
            }
            #expect(try await methods("alice", nil) as? [String] == ["push", "otp"], "no groups named: methods=")
            #expect(try await methods("alice", ["contractors"]) as? [String] == ["otp"], "otp,fido within push,otp")
            #expect(try await methods("alice", ["staff", "contractors", "domain users", "nopolicy"]) as? [String] == ["otp"],
                    "only what every group allows, in the first group's order; names without a policy (or that cannot have one) change nothing")
            #expect(try await methods("alice", ["kiosk"]) as? [String] == [], "nothing left: an empty list")
            try Self.setPolicy(fixture, "alice", "fido")
            #expect(try await methods("alice", ["contractors"]) as? [String] == ["fido"], "the user's own policy comes first")
            // A row that no longer parses (a newer securotp's) fails closed, and only when read:
            // both stores read the groups' rows only for a user without a policy of their own.
            try Self.setPolicy(fixture, "@broken", "fido,teleport")
            #expect(try await methods("alice", ["broken"]) as? [String] == ["fido"], "alice's own policy; @broken's row unread")
            _ = try PushAPITests.sql(fixture, "DELETE FROM method_policies WHERE subject = 'alice'")
            let unreadable = try await client.call(.post, "/v1/preflight", ["user": "alice", "groups": ["broken"]], bearer: fixture.host)
            #expect(unreadable.status >= 500, "fails closed: \(unreadable.status) \(unreadable.text)")
            _ = try PushAPITests.sql(fixture, "DELETE FROM method_policies WHERE subject = '@broken'")

            let tooMany = try await client.call(.post, "/v1/preflight", ["user": "alice", "groups": (0...MethodRules.maxGroups).map { "g\($0)" }],
                                                bearer: fixture.host)
            #expect(tooMany.status == 400, "never cut short: \(tooMany.status)")
        }
    }

    @Test("Push open is refused for a user whose methods leave out push, as for a user without a device; audited", arguments: Backend.tested)
    func pushRefused(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            try Self.setPolicy(fixture, "alice", "otp")
            let refused = try await PushAPITests.open(client, fixture, "alice")
            let deviceless = try await PushAPITests.open(client, fixture, "carol")
            #expect(refused.status == 409 && refused.status == deviceless.status, "\(refused.text)")
            #expect(refused.errorCode == deviceless.errorCode, "\(refused.text) vs \(deviceless.text)")
            #expect(refused.errorMessage == deviceless.errorMessage?.replacingOccurrences(of: "carol", with: "alice"), "\(refused.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM push_requests") == "0", "no request stored")
            let audit = try await client.call(.get, "/v1/audit?user=alice", bearer: fixture.admin)
            #expect(audit.text.contains("push refused: not among the user's login methods (otp"), "\(audit.text)")

            try Self.setPolicy(fixture, "alice", "push,otp")
            let opened = try await PushAPITests.open(client, fixture, "alice")
            #expect(opened.status == 201, "\(opened.text)")
        }
    }

    @Test("No offline approval for a user whose methods leave out otp: push open does not offer it and /v1/verify refuses the response",
          arguments: Backend.tested)
    func noOfflineApprovalWithoutOTP(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            _ = try await HostAPITests.enroll(client, fixture, "alice", ["kind": "hotp"])
            let device = try await PushOfflineAPITests.enroll(client, fixture, "alice")
            try Self.setPolicy(fixture, "alice", "push")
            let opened = try await PushAPITests.open(client, fixture, "alice")
            #expect(opened.status == 201 && opened["offline"] == nil, "offline approval offered: \(opened.text)")

            // A host that shows the offline challenge anyway: the right response is refused.
            try Self.setPolicy(fixture, "alice", "push,otp")
            let offered = try await PushOfflineAPITests.open(client, fixture, "alice")
            try Self.setPolicy(fixture, "alice", "push")
            let response = try PushOfflineAPITests.response(device, offered.challenge)
            let refused = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": response, "push_id": offered.id],
                                                bearer: fixture.host)
            #expect(refused.string("result") == "reject", "\(refused.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT state FROM push_requests WHERE id = '\(offered.id)'") == "cancelled",
                    "the request is withdrawn, so it cannot be approved later on the phone")
            let audit = try await client.call(.get, "/v1/audit?user=alice", bearer: fixture.admin)
            #expect(audit.text.contains("push offline"), "\(audit.text)")
        }
    }

    @Test("No offline codes for a user whose methods leave out otp: the HOTP code is refused and no hash handed out",
          arguments: Backend.tested)
    func noOfflineCodesWithoutOTP(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (laptop, secret) = try await Self.laptopWithHOTP(client, fixture, "alice")
            try Self.setPolicy(fixture, "alice", "push,fido")
            let refused = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 0)], bearer: laptop)
            #expect(refused.string("result") == "reject" && refused["offline"] == nil, "\(refused.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM offline_grants") == "0", "codes reserved for the host")
        }
    }

    @Test("A passcode refused by a policy without otp drops the host's offline codes of the user, not other users' or hosts'",
          arguments: Backend.tested)
    func refusedOTPDropsOfflineCodes(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (laptop, secret) = try await Self.laptopWithOfflineCodes(client, fixture)
            try Self.setPolicy(fixture, "alice", "push,fido")
            let refused = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 1)], bearer: laptop)
            #expect(refused.string("result") == "reject", "\(refused.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM offline_grants WHERE \"user\" = 'alice'") == "0", "alice's reservations dropped")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM offline_grants WHERE \"user\" = 'bob'") == "1", "bob's kept")
        }
    }

    @Test("""
          A preflight whose methods (after the groups) leave out otp drops the calling host's offline codes of the user: \
          the module drops its cache and never reports the codes it used offline
          """, arguments: Backend.tested)
    func preflightWithoutOTPDropsOfflineCodes(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (laptop, _) = try await Self.laptopWithOfflineCodes(client, fixture)
            try Self.setPolicy(fixture, "@kiosk", "push,fido")
            let bob = try await client.call(.post, "/v1/preflight", ["user": "bob"], bearer: laptop)
            #expect(bob.status == 200, "\(bob.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM offline_grants WHERE \"user\" = 'bob'") == "1", "otp allowed: bob's kept")
            let alice = try await client.call(.post, "/v1/preflight", ["user": "alice", "groups": ["kiosk"]], bearer: laptop)
            #expect(alice.status == 200 && (alice["methods"] as? [String])?.contains("otp") == false, "\(alice.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM offline_grants WHERE \"user\" = 'alice'") == "0", "alice's reservations dropped")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM offline_grants WHERE \"user\" = 'bob'") == "1", "bob's kept")
        }
    }

    @Test("Preflight for a user whose methods leave out otp issues no OCRA challenge (none charged) and offers no push when push is left out",
          arguments: Backend.tested)
    func preflightFollowsMethods(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            _ = try await HostAPITests.enroll(client, fixture, "olga", ["kind": "ocra", "suite": OCRAChallengeAPITests.suite])
            try Self.setPolicy(fixture, "olga", "push,fido")
            let noOTP = try await client.call(.post, "/v1/preflight", ["user": "olga"], bearer: fixture.host)
            #expect(noOTP.status == 200 && noOTP["ocra_challenge"] == nil, "\(noOTP.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM challenges") == "0", "no challenge stored")
            try Self.setPolicy(fixture, "olga", "otp")
            let withOTP = try await client.call(.post, "/v1/preflight", ["user": "olga"], bearer: fixture.host)
            #expect(withOTP["ocra_challenge"] is [String: Any], "otp allowed again: \(withOTP.text)")

            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            try Self.setPolicy(fixture, "alice", "otp")
            let noPush = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(noPush.status == 200 && noPush["push"] == nil, "push left out: \(noPush.text)")
            try Self.setPolicy(fixture, "alice", "push,otp")
            let withPush = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(withPush["push"] as? Bool == true, "\(withPush.text)")
        }
    }

    @Test("A FIDO challenge offers nothing to a user whose methods leave out fido, as to a user without a key; audited")
    func fidoRefused() async throws {
        let fixture = try await ValidatorFixture.make()
        let store = try Store.open(fixture.configuration.store.paths, .migrate)
        let pair = try #require(PushRules.generateKeyPair())
        let credential = FidoCredential(keyHandle: Array(repeating: 5, count: 32), publicKey: Array(pair.publicKey.suffix(64)), type: .es256,
                                        presence: true, verification: false, pin: false, origin: "pam://test-host")
        _ = try store.addFido([credential], user: "alice", source: "test", maxTokens: 10, now: Int64(Date().timeIntervalSince1970))
        try store.setMethodPolicy("alice", try #require(LoginMethods(parsing: "otp")))
        try await fixture.withClient { client in
            let refused = try await client.call(.post, "/v1/fido/challenge", ["user": "alice", "origin": "pam://test-host"], bearer: fixture.host)
            let keyless = try await client.call(.post, "/v1/fido/challenge", ["user": "carol", "origin": "pam://test-host"], bearer: fixture.host)
            #expect(refused.status == 200 && (refused["credentials"] as? [Any])?.isEmpty == true, "\(refused.text)")
            #expect(Set(refused.json.keys) == Set(keyless.json.keys), "\(refused.text) vs \(keyless.text)")
            #expect(try PushAPITests.sql(fixture, "SELECT count(*) FROM challenges") == "0", "no challenge stored")
            let bad = try await client.call(.post, "/v1/fido/challenge", ["user": "alice", "origin": ""], bearer: fixture.host)
            #expect(bad.status == 400, "a bad origin is refused as the store refuses it: \(bad.text)")
            let audit = try await client.call(.get, "/v1/audit?user=alice", bearer: fixture.admin)
            #expect(audit.text.contains("fido refused: not among the user's login methods (otp"), "\(audit.text)")
        }
    }

    @Test("A challenge issued before fido left the user's methods is not taken: its assertion is refused as an unknown challenge, counted")
    func fidoVerifyAfterPolicyChange() async throws {
        let fixture = try await ValidatorFixture.make()
        let store = try Store.open(fixture.configuration.store.paths, .migrate)
        let pair = try #require(PushRules.generateKeyPair())
        let credential = FidoCredential(keyHandle: Array(repeating: 6, count: 32), publicKey: Array(pair.publicKey.suffix(64)), type: .es256,
                                        presence: true, verification: false, pin: false, origin: "pam://test-host")
        let serial = try store.addFido([credential], user: "alice", source: "test", maxTokens: 10, now: Int64(Date().timeIntervalSince1970))[0].serial
        try await fixture.withClient { client in
            let offer = try await client.call(.post, "/v1/fido/challenge", ["user": "alice", "origin": "pam://test-host"], bearer: fixture.host)
            #expect((offer["credentials"] as? [Any])?.count == 1, "\(offer.text)")
            let id = try #require(offer.string("id"))
            let challenge = try #require(offer.string("challenge"))
            let clientData = TestKey.clientData(challenge: challenge, origin: "pam://test-host")
            let data = PushRules.sha256(Array("pam://test-host".utf8)) + [0x01, 0, 0, 0, 9]
            let signature = try #require(PushRules.sign(data + PushRules.sha256(clientData), privateKeyPEM: pair.privateKeyPEM))
            try Self.setPolicy(fixture, "alice", "otp")
            let refused = try await client.call(.post, "/v1/fido/verify", ["user": "alice", "id": id, "serial": serial,
                                                                          "client_data": PushRules.base64URLEncode(clientData),
                                                                          "authenticator_data": PushRules.base64URLEncode(data),
                                                                          "signature": PushRules.base64URLEncode(signature)], bearer: fixture.host)
            #expect(refused.string("result") == "reject" && refused.string("reason") == "unknown, expired or used FIDO challenge"
                    && refused["failures"] as? Int == 1, "\(refused.text)")
        }
    }
}

/// `securotp --server URL policy` and `--database` (docs/configuration.md, "Login methods"):
/// the admin API keeps policies in the validator's store, SQLite or PostgreSQL.
@Suite("Validator API: login-method policies for admins")
struct MethodPolicyAdminAPITests {
    @Test("Admins set, list and remove policies of users and groups; hosts may not; a bad order is refused; a set policy is enforced",
          arguments: Backend.tested)
    func setListClear(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "alice")
            let set = try await client.call(.put, "/v1/policies/alice", ["methods": ["fido", "push"]], bearer: fixture.admin)
            #expect(set.status == 200 && set["methods"] as? [String] == ["fido", "push"] && set.string("subject") == "alice", "\(set.text)")
            let group = try await client.call(.put, "/v1/policies/%40contractors", ["methods": ["otp"]], bearer: fixture.admin)
            #expect(group.status == 200 && group.string("subject") == "@contractors", "\(group.text)")
            let list = try await client.call(.get, "/v1/policies", bearer: fixture.admin)
            let rows = try #require(list["policies"] as? [[String: Any]], "\(list.text)")
            #expect(rows.compactMap { $0["subject"] as? String } == ["@contractors", "alice"], "\(list.text)")

            let refused = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(refused.string("result") == "reject", "the policy set over the API is enforced: \(refused.text)")

            for bad in [["fido", "fido"], [], ["sms"], ["fido,otp"]] {
                let answer = try await client.call(.put, "/v1/policies/alice", ["methods": bad], bearer: fixture.admin)
                #expect(answer.status == 400 && answer.errorCode == "invalid_input", "\(bad): \(answer.text)")
            }
            let badName = try await client.call(.put, "/v1/policies/%40", ["methods": ["otp"]], bearer: fixture.admin)
            #expect(badName.status == 400, "\(badName.text)")
            let byHost = try await client.call(.put, "/v1/policies/alice", ["methods": ["otp"]], bearer: fixture.host)
            #expect(byHost.status == 403, "\(byHost.text)")

            let cleared = try await client.call(.delete, "/v1/policies/alice", bearer: fixture.admin)
            #expect(cleared.status == 204, "\(cleared.text)")
            let again = try await client.call(.delete, "/v1/policies/alice", bearer: fixture.admin)
            #expect(again.status == 404, "\(again.text)")
            let accepted = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "\(accepted.text)")
            let audit = try await client.call(.get, "/v1/audit?user=alice", bearer: fixture.admin)
            #expect(audit.text.contains("policy set") && audit.text.contains("policy clear"), "\(audit.text)")
        }
    }
}
