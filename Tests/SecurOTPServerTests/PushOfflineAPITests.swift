import Foundation
import SecurOTPCore
import SecurOTPService
import Testing

/// Offline approval on the validator (docs/push.md, "Offline approval"), on SQLite and
/// PostgreSQL: the activation issues the secret, `POST /v1/push` says `offline`, and
/// `/v1/verify` with `push_id` takes the request's response once; anything else is a passcode.
@Suite("Validator API: offline push approval")
struct PushOfflineAPITests {
    struct OfflineDevice {
        var id: String
        var credential: String
        var secret: SecretBytes
    }

    /// Adds and activates an authenticator device, keeping the offline secret it is given.
    static func enroll(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String) async throws -> OfflineDevice {
        let added = try await client.call(.post, "/v1/users/\(user)/devices", ["name": "laptop"], bearer: fixture.admin)
        let code = try #require(added.string("activation_code"), "\(added.text)")
        let activated = try await client.call(.post, "/v1/devices/activate", ["activation_code": code, "aaid": "FFFF#0001",
                                                                            "public_key": PushRules.base64URLEncode(try TestDevice().publicKey),
                                                                            "user_verification": true])
        #expect(activated.status == 200, "\(activated.text)")
        #expect(activated.string("offline_suite") == "OCRA-1:HOTP-SHA256-8:QN08", "\(activated.text)")
        let secretText = try #require(activated.string("offline_secret"), "\(activated.text)")
        let secret = try #require(Base64.decode(secretText, .url))
        #expect(secret.count == 32)
        return OfflineDevice(id: try #require(activated.string("device")), credential: try #require(activated.string("credential")),
                             secret: SecretBytes(copying: secret))
    }

    /// Opens a push request as a host does; the challenge the host derives from its own view.
    static func open(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String) async throws -> (id: String, challenge: String) {
        let opened = try await PushAPITests.open(client, fixture, user)
        #expect(opened.status == 201 && opened["offline"] as? Bool == true, "\(opened.text)")
        let id = try #require(opened.string("id"))
        let expires = try #require(opened["expires"] as? Int)
        let statement = PushStatement(id: id, user: user, host: try #require(opened.string("host")), service: "sshd", remoteAddress: "192.0.2.7",
                                      tty: "ssh", command: "", nonce: PushAPITests.nonce, number: "492817", expires: String(expires), device: "")
        return (id, OfflineApproval.challenge(statement))
    }

    static func response(_ device: OfflineDevice, _ challenge: String) throws -> String {
        String(decoding: try OfflineApproval.response(secret: device.secret, challenge: challenge), as: UTF8.self)
    }

    static func state(_ fixture: ValidatorFixture, _ id: String) throws -> String {
        try PushAPITests.sql(fixture, "SELECT state FROM push_requests WHERE id = '\(id)'")
    }

    static func failures(_ fixture: ValidatorFixture) throws -> String {
        let value = try PushAPITests.sql(fixture, "SELECT failures FROM users WHERE name = 'alice'")
        return value.isEmpty ? "0" : value
    }

    @Test("An offline response is accepted once; its replay, a wrong one and one for an expired request are counted passcodes",
          arguments: Backend.tested)
    func offlineOnce(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "alice", ["kind": "hotp"])
            let device = try await Self.enroll(client, fixture, "alice")

            // A wrong response: a wrong passcode, counted once; the request is cancelled.
            let first = try await Self.open(client, fixture, "alice")
            var wrong = Array(try Self.response(device, first.challenge).utf8)
            wrong[0] = wrong[0] == UInt8(ascii: "9") ? UInt8(ascii: "0") : wrong[0] + 1
            let refused = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": String(decoding: wrong, as: UTF8.self),
                                                                      "push_id": first.id], bearer: fixture.host)
            #expect(refused.string("result") == "reject", "\(refused.text)")
            #expect(try Self.failures(fixture) == "1")
            #expect(try Self.state(fixture, first.id) == "cancelled")

            // The right response: accepted, the request consumed, the failures cleared.
            let second = try await Self.open(client, fixture, "alice")
            let response = try Self.response(device, second.challenge)
            let accepted = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": response, "push_id": second.id],
                                                 bearer: fixture.host)
            #expect(accepted.string("result") == "accept" && accepted.string("outcome") == "push_offline", "\(accepted.text)")
            #expect(accepted.string("serial") == device.id, "\(accepted.text)")
            #expect(try Self.state(fixture, second.id) == "consumed")
            #expect(try Self.failures(fixture) == "0")
            // The device can no longer approve it, and the host's wait gets no approval.
            let requests = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: device.credential)
            #expect((requests["requests"] as? [Any])?.isEmpty == true, "\(requests.text)")
            let waited = try await client.call(.post, "/v1/push/wait", ["id": second.id, "wait": 1], bearer: fixture.host)
            #expect(waited.string("state") == "consumed" && waited["approval"] == nil, "\(waited.text)")

            // The replay: a wrong passcode, counted.
            let replay = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": response, "push_id": second.id],
                                               bearer: fixture.host)
            #expect(replay.string("result") == "reject", "\(replay.text)")
            #expect(try Self.failures(fixture) == "1")

            // Another request's response is not this one's.
            let third = try await Self.open(client, fixture, "alice")
            let crossed = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": response, "push_id": third.id],
                                                bearer: fixture.host)
            #expect(crossed.string("result") == "reject", "\(crossed.text)")
            #expect(try Self.state(fixture, third.id) == "cancelled")

            // Expired: the right response is refused, and the request stays unapproved.
            let fourth = try await Self.open(client, fixture, "alice")
            // Just past, not long past: a request a day past its expiry is deleted.
            fixture.clock.advance(fixture.configuration.push.requestLifetime + 10)
            let stale = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": try Self.response(device, fourth.challenge),
                                                                    "push_id": fourth.id], bearer: fixture.host)
            #expect(stale.string("result") == "reject", "\(stale.text)")
            let fourthState = try Self.state(fixture, fourth.id)
            #expect(fourthState == "expired", "\(fourthState)")
            #expect(try Self.failures(fixture) == "3")

            // A passcode at the push prompt: the request is cancelled and the code verified, in one call.
            let fifth = try await Self.open(client, fixture, "alice")
            let code = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 0), "push_id": fifth.id],
                                             bearer: fixture.host)
            #expect(code.string("result") == "accept" && code.string("outcome") == "accepted", "\(code.text)")
            #expect(try Self.state(fixture, fifth.id) == "cancelled")
        }
    }

    @Test("Another host's push id is ignored: the answer is only a passcode, and the request stays pending", arguments: Backend.tested)
    func otherHostsRequest(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await Self.enroll(client, fixture, "alice")
            let other = try await client.call(.post, "/v1/hosts", ["name": "web2"], bearer: fixture.admin)
            let otherHost = try #require(other.string("credential"), "\(other.text)")
            let opened = try await Self.open(client, fixture, "alice")
            let answer = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": try Self.response(device, opened.challenge),
                                                                     "push_id": opened.id], bearer: otherHost)
            #expect(answer.string("result") != "accept", "\(answer.text)")
            #expect(try Self.state(fixture, opened.id) == "pending")
        }
    }
}
