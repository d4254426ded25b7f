import Foundation
import Hummingbird
import Testing

/// What admins see: every securotp operation over the API, and who may call what.
@Suite("Validator API: administration and access")
struct AdminAPITests {
    @Test("A user name with `@`, percent-encoded in the path as securotp --server sends it, is the same name on every users/:user route")
    func percentEncodedUser() async throws {
        let fixture = try await ValidatorFixture.make()
        try await fixture.withClient { client in
            let (_, serial) = try await HostAPITests.enroll(client, fixture, "alice%40corp", ["kind": "hotp"])
            #expect(try PushAPITests.sql(fixture, "SELECT user FROM tokens") == "alice@corp", "stored as a local enroll stores it")
            let renamed = try await client.call(.patch, "/v1/users/alice%40corp/tokens/\(serial)", ["nickname": "key"], bearer: fixture.admin)
            #expect(renamed.status == 204 || renamed.status == 200, "\(renamed.text)")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice@corp"], bearer: fixture.host)
            #expect(preflight["has_tokens"] as? Bool == true, "\(preflight.text)")
            let reset = try await client.call(.delete, "/v1/users/alice%40corp/tokens", bearer: fixture.admin)
            #expect(reset["removed"] as? Int == 1, "\(reset.text)")
            let bad = try await client.call(.delete, "/v1/users/alice%4/tokens", bearer: fixture.admin)
            #expect(bad.status == 400, "\(bad.text)")
            let control = try await client.call(.patch, "/v1/users/alice%40corp/tokens/\(serial)%0A", ["nickname": "key"], bearer: fixture.admin)
            #expect(control.status == 400 && control.text.contains("control character"), "a decoded control byte is refused: \(control.text)")
        }
    }

    @Test("Credentials: none, malformed, revoked and the wrong kind are refused before any route runs", arguments: Backend.tested)
    func credentials(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let health = try await client.call(.get, "/v1/health", bearer: fixture.admin)
            #expect(health.string("status") == "ok" && health.string("store") == backend.rawValue)

            let none = try await client.call(.get, "/v1/tokens")
            #expect(none.status == 401 && none.errorCode == "unauthorized")
            let malformed = try await client.call(.get, "/v1/tokens", bearer: "sotp_a_nothex_x")
            #expect(malformed.status == 401)
            let forged = try await client.call(.get, "/v1/tokens", bearer: String(fixture.admin.dropLast()) + (fixture.admin.hasSuffix("0") ? "1" : "0"))
            #expect(forged.status == 401, "a changed secret must not authenticate")
            let hostOnAdmin = try await client.call(.get, "/v1/tokens", bearer: fixture.host)
            #expect(hostOnAdmin.status == 403 && hostOnAdmin.errorCode == "forbidden")
            let adminOnHost = try await client.call(.post, "/v1/verify", ["user": "a", "passcode": "1"], bearer: fixture.admin)
            #expect(adminOnHost.status == 403)

            let hosts = try await client.call(.get, "/v1/hosts", bearer: fixture.admin)
            #expect((hosts["credentials"] as? [[String: Any]])?.map { $0["name"] as? String } == ["web1"])
            #expect(!hosts.text.contains(String(fixture.host.suffix(64))), "a secret in a listing")
            try await client.call(.delete, "/v1/hosts/web1", bearer: fixture.admin)
            let revoked = try await client.call(.post, "/v1/verify", ["user": "a", "passcode": "1"], bearer: fixture.host)
            #expect(revoked.status == 401, "revoked credentials stop working at once")
            let twice = try await client.call(.delete, "/v1/hosts/web1", bearer: fixture.admin)
            #expect(twice.status == 404)
            let duplicate = try await client.call(.post, "/v1/admins", ["name": "root"], bearer: fixture.admin)
            #expect(duplicate.status == 409 && duplicate.errorCode == "conflict")
            let badName = try await client.call(.post, "/v1/admins", ["name": "bad name"], bearer: fixture.admin)
            #expect(badName.status == 400)
        }
    }

    @Test("Every token operation: enroll, list, nickname, PIN, resync, recovery codes, binding ID, status, delete, reset", arguments: Backend.tested)
    func tokenOperations(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, serial) = try await HostAPITests.enroll(client, fixture, "alice", ["kind": "hotp", "nickname": "key"])
            let listed = try await client.call(.get, "/v1/tokens?user=alice", bearer: fixture.admin)
            let token = try #require((listed["tokens"] as? [[String: Any]])?.first, "\(listed.text)")
            #expect(token["serial"] as? String == serial && token["kind"] as? String == "hotp" && token["nickname"] as? String == "key")
            #expect(token["counter"] as? Int == 0 && token["user_locked"] as? Bool == false)
            #expect(!listed.text.contains(secret))

            let renamed = try await client.call(.patch, "/v1/users/alice/tokens/\(serial)", ["nickname": "yubikey"], bearer: fixture.admin)
            #expect(renamed.status == 204)
            let tooLong = try await client.call(.patch, "/v1/users/alice/tokens/\(serial)", ["nickname": String(repeating: "n", count: 33)], bearer: fixture.admin)
            #expect(tooLong.status == 400 && tooLong.errorCode == "invalid_input")
            let elsewhere = try await client.call(.patch, "/v1/users/bob/tokens/\(serial)", ["nickname": "x"], bearer: fixture.admin)
            #expect(elsewhere.status == 404, "another user's serial is not found")

            #expect(try await client.call(.put, "/v1/users/alice/tokens/\(serial)/pin", ["pin": "2468"], bearer: fixture.admin).status == 204)
            let weak = try await client.call(.put, "/v1/users/alice/tokens/\(serial)/pin", ["pin": "1"], bearer: fixture.admin)
            #expect(weak.status == 400)
            #expect(try await client.call(.delete, "/v1/users/alice/tokens/\(serial)/pin", bearer: fixture.admin).status == 204)

            let resync = try await client.call(.post, "/v1/users/alice/tokens/\(serial)/resync",
                                               ["first": Codes.hotp(secret, counter: 40), "second": Codes.hotp(secret, counter: 41)], bearer: fixture.admin)
            #expect(resync["counter"] as? Int == 42 && resync.string("description") == "next counter 42", "\(resync.text)")

            let codes = try await client.call(.post, "/v1/users/alice/recovery-codes", ["count": 3], bearer: fixture.admin)
            let recovery = try #require(codes["codes"] as? [String], "\(codes.text)")
            #expect(recovery.count == 3)
            let used = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": recovery[0]], bearer: fixture.host)
            #expect(used.string("result") == "accept" && used.string("serial") == "recovery", "\(used.text)")
            #expect(used.string("outcome") == "recovery_code", "\(used.text)")

            let binding = try await client.call(.get, "/v1/users/alice/binding-id", bearer: fixture.admin)
            #expect(binding.string("binding_id")?.count == 24)

            let status = try await client.call(.get, "/v1/status", bearer: fixture.admin)
            #expect(status["tokens"] as? Int == 1 && status["hotp_tokens"] as? Int == 1 && status.string("store") == backend.rawValue)

            #expect(try await client.call(.delete, "/v1/users/alice/tokens/\(serial)", bearer: fixture.admin).status == 204)
            let gone = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 42)], bearer: fixture.host)
            #expect(gone.string("result") == "reject", "a deleted token's codes stop working")
            _ = try await HostAPITests.enroll(client, fixture, "alice")
            let reset = try await client.call(.delete, "/v1/users/alice/tokens", bearer: fixture.admin)
            #expect(reset["removed"] as? Int == 1)
        }
    }

    @Test("Import through the API: a base64 otpauth URI; garbage is 422 and writes nothing", arguments: Backend.tested)
    func importTokens(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let uri = "otpauth://totp/ACME:bob?secret=JBSWY3DPEHPK3PXP&issuer=ACME"
            let imported = try await client.call(.post, "/v1/users/bob/tokens/import",
                                                 ["source": Data(uri.utf8).base64EncodedString()], bearer: fixture.admin)
            #expect(imported.status == 201 && (imported["tokens"] as? [[String: Any]])?.first?["source"] as? String == "otpauth", "\(imported.text)")
            let garbage = try await client.call(.post, "/v1/users/carol/tokens/import",
                                                ["source": Data("not a token".utf8).base64EncodedString()], bearer: fixture.admin)
            #expect(garbage.status == 422 && garbage.errorCode == "import_invalid", "\(garbage.text)")
            let none = try await client.call(.get, "/v1/tokens?user=carol", bearer: fixture.admin)
            #expect((none["tokens"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("Bad requests end in the envelope: broken JSON, missing fields, bad user names, unknown paths", arguments: Backend.tested)
    func errorEnvelope(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let broken = try await client.call(.post, "/v1/verify", bearer: fixture.host, rawBody: "{\"user\":")
            #expect(broken.status == 400 && broken.errorCode == "invalid_input", "\(broken.text)")
            let missing = try await client.call(.post, "/v1/verify", ["user": "a"], bearer: fixture.host)
            #expect(missing.status == 400, "\(missing.text)")
            let badUser = try await client.call(.post, "/v1/verify", ["user": "a:b", "passcode": "1"], bearer: fixture.host)
            #expect(badUser.status == 400 && badUser.errorMessage?.contains("not a valid user name") == true, "\(badUser.text)")
            let long = try await client.call(.post, "/v1/verify", ["user": "a", "passcode": String(repeating: "1", count: 2000)], bearer: fixture.host)
            #expect(long.status == 400)
            let unknown = try await client.call(.get, "/v1/nothing", bearer: fixture.admin)
            #expect(unknown.status == 404 && unknown.errorCode == "not_found")
        }
    }
}
