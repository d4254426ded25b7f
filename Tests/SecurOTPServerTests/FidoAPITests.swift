import Foundation
import Hummingbird
import HummingbirdTesting
import SecurOTPCore
import SecurOTPServer
import SecurOTPService
import SecurOTPStore
import Testing

/// A security key as the validator sees it (docs/fido.md, "Remote mode"): a P-256 credential,
/// assertions over the validator's challenge with a counter the test chooses (FidoClusterTests too).
struct TestKey {
    let privateKeyPEM: String
    var credential: FidoCredential
    static let origin = "pam://test-host"

    init(origin: String = Self.origin) throws {
        let pair = try #require(PushRules.generateKeyPair())
        privateKeyPEM = pair.privateKeyPEM
        // SPKI of a P-256 key: the uncompressed point 04||x||y is its last 65 bytes.
        credential = FidoCredential(keyHandle: Array((0..<32).map { _ in UInt8.random(in: 0...255) }), publicKey: Array(pair.publicKey.suffix(64)),
                                    type: .es256, presence: true, verification: false, pin: false, origin: origin)
    }

    /// The client data a host builds for `challenge` at `origin` (docs/fido.md, "What the key signs").
    static func clientData(challenge: String, origin: String, type: String = "securotp.fido.login") -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)"}"#.utf8)
    }

    /// The verify body for challenge `offer` with `counter` (and the UP flag per `touched`): the
    /// key signs its authenticator data and SHA-256 of `clientData` (default: the host's client
    /// data for the offer's challenge at the credential's origin).
    func assertion(_ offer: APIClient.Answer, user: String, serial: String, counter: UInt32, touched: Bool = true,
                   clientData: [UInt8]? = nil) throws -> [String: Any] {
        let id = try #require(offer.string("id"))
        let challenge = try #require(offer.string("challenge"), "\(offer.text)")
        let signed = clientData ?? Self.clientData(challenge: challenge, origin: credential.origin)
        let authenticatorData = PushRules.sha256(Array(credential.origin.utf8)) + [touched ? 0x01 : 0x00]
            + [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        let signature = try #require(PushRules.sign(authenticatorData + PushRules.sha256(signed), privateKeyPEM: privateKeyPEM))
        return ["user": user, "id": id, "serial": serial, "client_data": PushRules.base64URLEncode(signed),
                "authenticator_data": PushRules.base64URLEncode(authenticatorData), "signature": PushRules.base64URLEncode(signature)]
    }
}

@Suite("Validator API: FIDO security keys in remote mode")
struct FidoAPITests {
    /// Adds `credential` for `user` through the service (the admin route's path, on either
    /// store); returns its serial.
    static func enroll(_ fixture: ValidatorFixture, _ credential: FidoCredential, user: String = "root") async throws -> String {
        let request = FidoAddRequest(credentials: [.init(credential: credential.u2fField, origin: credential.origin)], source: "pamu2fcfg")
        let added = try await fixture.service.addFido(user: user, request, caller: .local("test"))
        return try #require(added.credentials.first?.serial)
    }

    static func enroll(_ fixture: ValidatorFixture, _ key: TestKey, user: String = "root") async throws -> String {
        try await enroll(fixture, key.credential, user: user)
    }

    static func challenge(_ client: APIClient, _ host: String, user: String = "root") async throws -> APIClient.Answer {
        let offer = try await client.call(.post, "/v1/fido/challenge", ["user": user, "origin": TestKey.origin], bearer: host)
        #expect(offer.status == 200, "\(offer.text)")
        return offer
    }

    @Test("Credentials added together (one pam_u2f line) are read back in the line's order: the login order and max_devices follow the line", arguments: Backend.tested)
    func lineOrderKept(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let keys = try (0..<8).map { _ in try TestKey() }
        let request = FidoAddRequest(credentials: keys.map { .init(credential: $0.credential.u2fField, origin: $0.credential.origin) }, source: "mapping-file")
        let added = try await fixture.service.addFido(user: "root", request, caller: .local("test"))
        #expect(added.credentials.map(\.credential) == keys.map(\.credential.u2fField))
        let read = try await fixture.service.fidoCredentials(user: "root", caller: .local("test"))
        #expect(read.credentials.map(\.credential) == keys.map(\.credential.u2fField), "in the order given, not the random serials' order")
    }

    @Test("A challenge takes an answer only from a credential it offered: another origin's key of the same user is refused", arguments: Backend.tested)
    func onlyOffered(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let here = try TestKey(), elsewhere = try TestKey(origin: "pam://other-host")
        let serial = try await Self.enroll(fixture, here)
        let otherSerial = try await Self.enroll(fixture, elsewhere)
        try await fixture.withClient { client in
            let offer = try await Self.challenge(client, fixture.host)
            #expect((offer["credentials"] as? [[String: Any]])?.map { $0["serial"] as? String } == [serial], "\(offer.text)")
            let foreign = try await client.call(.post, "/v1/fido/verify", try elsewhere.assertion(offer, user: "root", serial: otherSerial, counter: 3),
                                                bearer: fixture.host)
            #expect(foreign.string("result") == "reject" && foreign.string("reason")?.contains("not offered") == true, "\(foreign.text)")
            let next = try await Self.challenge(client, fixture.host)
            let own = try await client.call(.post, "/v1/fido/verify", try here.assertion(next, user: "root", serial: serial, counter: 3), bearer: fixture.host)
            #expect(own.string("result") == "accept", "\(own.text)")
        }
    }

    @Test("A resident credential (no key handle) is left out of the challenge; the user's other credential is still offered", arguments: Backend.tested)
    func residentLeftOut(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let key = try TestKey()
        let serial = try await Self.enroll(fixture, key)
        var resident = try TestKey().credential
        resident.keyHandle = []
        _ = try await Self.enroll(fixture, resident)
        try await fixture.withClient { client in
            let offer = try await Self.challenge(client, fixture.host)
            let offered = try #require(offer["credentials"] as? [[String: Any]], "\(offer.text)")
            #expect(offered.map { $0["serial"] as? String } == [serial], "\(offer.text)")
        }
    }

    @Test("Preflight says fido; the challenge offers the credential; the assertion is accepted once, its replay refused", arguments: Backend.tested)
    func acceptOnceThenReplay(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let key = try TestKey()
        let serial = try await Self.enroll(fixture, key)
        try await fixture.withClient { client in
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "root"], bearer: fixture.host)
            #expect(preflight["fido"] as? Bool == true, "\(preflight.text)")
            #expect(preflight["methods"] == nil, "no policy, no methods: \(preflight.text)")

            let offer = try await Self.challenge(client, fixture.host)
            let offered = try #require(offer["credentials"] as? [[String: Any]])
            #expect(offered.count == 1 && offered.first?["serial"] as? String == serial, "\(offer.text)")
            #expect(offered.first?["key_handle"] as? String == PushRules.base64URLEncode(key.credential.keyHandle))

            let body = try key.assertion(offer, user: "root", serial: serial, counter: 5)
            let accepted = try await client.call(.post, "/v1/fido/verify", body, bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "\(accepted.text)")
            let replay = try await client.call(.post, "/v1/fido/verify", body, bearer: fixture.host)
            #expect(replay.string("result") == "reject", "the challenge is taken once: \(replay.text)")
            #expect(replay["failures"] as? Int == 1, "a replay counts: \(replay.text)")
            #expect(replay.string("reason") == "unknown, expired or used FIDO challenge", "refused for its challenge, not its counter: \(replay.text)")
            let still = try await Self.challenge(client, fixture.host)
            #expect((still["credentials"] as? [Any])?.count == 1, "a replayed challenge does not disable the credential: \(still.text)")

            // A host asking for another origin is offered nothing.
            let elsewhere = try await client.call(.post, "/v1/fido/challenge", ["user": "root", "origin": "pam://other"], bearer: fixture.host)
            #expect((elsewhere["credentials"] as? [Any])?.isEmpty == true, "\(elsewhere.text)")
        }
    }

    @Test("What the key signed must be this host's securotp login: the client data with this challenge at the credential's origin; any other, signed or not, is refused and counted", arguments: Backend.tested)
    func clientDataChecked(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let key = try TestKey()
        let serial = try await Self.enroll(fixture, key)
        try await fixture.withClient { client in
            let offer = try await Self.challenge(client, fixture.host)
            let challenge = try #require(offer.string("challenge"), "\(offer.text)")
            #expect(PushRules.base64URLDecode(challenge)?.count == 32, "\(offer.text)")
            #expect(offer["client_data_hash"] == nil, "no hash for the host to sign: \(offer.text)")
            let other = try await Self.challenge(client, fixture.host)
            let otherChallenge = try #require(other.string("challenge"))

            // Each signed correctly over what it names, each refused for what it names.
            let wrong: [(String, [UInt8])] = [
                ("another challenge", TestKey.clientData(challenge: otherChallenge, origin: TestKey.origin)),
                ("another origin", TestKey.clientData(challenge: challenge, origin: "https://accounts.example")),
                ("a WebAuthn login", TestKey.clientData(challenge: challenge, origin: TestKey.origin, type: "webauthn.get")),
                ("extra members", Array(#"{"type":"securotp.fido.login","challenge":"\#(challenge)","origin":"\#(TestKey.origin)","crossOrigin":false}"#.utf8)),
            ]
            var failures = 0
            for (what, clientData) in wrong {
                let next = try await Self.challenge(client, fixture.host)
                var body = try key.assertion(next, user: "root", serial: serial, counter: 5, clientData: clientData)
                if what == "another challenge" { body["id"] = try #require(offer.string("id")) }
                let refused = try await client.call(.post, "/v1/fido/verify", body, bearer: fixture.host)
                failures += 1
                #expect(refused.string("result") == "reject" && refused["failures"] as? Int == failures, "\(what): \(refused.text)")
                #expect(refused.string("reason")?.contains("client data") == true, "\(what): \(refused.text)")
            }

            let fresh = try await Self.challenge(client, fixture.host)
            var missing = try key.assertion(fresh, user: "root", serial: serial, counter: 5)
            missing["client_data"] = nil
            let noClientData = try await client.call(.post, "/v1/fido/verify", missing, bearer: fixture.host)
            #expect(noClientData.status == 400, "an assertion without its client data: \(noClientData.text)")

            let again = try await Self.challenge(client, fixture.host)
            let accepted = try await client.call(.post, "/v1/fido/verify", try key.assertion(again, user: "root", serial: serial, counter: 5),
                                                 bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "the host's own client data for this challenge: \(accepted.text)")
        }
    }

    @Test("A counter that does not rise is refused and disables the credential (cloned key); a bad signature and no touch count", arguments: Backend.tested)
    func clonedAndRefused(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let key = try TestKey()
        let serial = try await Self.enroll(fixture, key)
        try await fixture.withClient { client in
            let first = try await Self.challenge(client, fixture.host)
            let accepted = try await client.call(.post, "/v1/fido/verify", try key.assertion(first, user: "root", serial: serial, counter: 7),
                                                 bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "\(accepted.text)")

            let untouched = try await Self.challenge(client, fixture.host)
            let noPresence = try await client.call(.post, "/v1/fido/verify",
                                                   try key.assertion(untouched, user: "root", serial: serial, counter: 8, touched: false),
                                                   bearer: fixture.host)
            #expect(noPresence.string("result") == "reject" && noPresence["failures"] as? Int == 1, "\(noPresence.text)")

            let declinedOffer = try await Self.challenge(client, fixture.host)
            let declined = try await client.call(.post, "/v1/fido/verify",
                                                 ["user": "root", "id": try #require(declinedOffer.string("id")), "serial": serial, "declined": true],
                                                 bearer: fixture.host)
            #expect(declined.string("result") == "reject" && declined["failures"] as? Int == 2, "\(declined.text)")

            let stale = try await Self.challenge(client, fixture.host)
            let cloned = try await client.call(.post, "/v1/fido/verify", try key.assertion(stale, user: "root", serial: serial, counter: 7),
                                               bearer: fixture.host)
            #expect(cloned.string("result") == "reject", "\(cloned.text)")
            #expect(cloned.string("reason")?.hasSuffix("the key was cloned") == true, "\(cloned.text)")

            let after = try await Self.challenge(client, fixture.host)
            #expect((after["credentials"] as? [Any])?.isEmpty == true, "a cloned credential is never offered again: \(after.text)")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "root"], bearer: fixture.host)
            #expect(preflight["fido"] as? Bool == true, "a user whose only key is disabled still holds one: nullok must not skip them: \(preflight.text)")
            let audit = try await client.call(.get, "/v1/audit?user=root", bearer: fixture.admin)
            #expect(audit.text.contains("credential disabled"), "\(audit.text)")
        }
    }

    @Test("Two logins racing with the same counter: exactly one is accepted", arguments: Backend.tested)
    func racingLogins(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let key = try TestKey()
        let serial = try await Self.enroll(fixture, key)
        try await fixture.withClient { client in
            let one = try await Self.challenge(client, fixture.host)
            let two = try await Self.challenge(client, fixture.host)
            let bodies = [try key.assertion(one, user: "root", serial: serial, counter: 3), try key.assertion(two, user: "root", serial: serial, counter: 3)]
            let host = fixture.host
            let results = try await withThrowingTaskGroup(of: String.self) { group in
                for body in bodies {
                    let sendable = try JSONSerialization.data(withJSONObject: body)
                    group.addTask {
                        let decoded = try JSONSerialization.jsonObject(with: sendable) as? [String: Any]
                        return try await client.call(.post, "/v1/fido/verify", decoded, bearer: host).string("result") ?? ""
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { $0 == "accept" }.count == 1, "\(results)")
        }
    }

    @Test("A locked user is offered no credential and an assertion is answered locked; a user's method policy reaches preflight", arguments: Backend.tested)
    func lockedAndMethods(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.store.policy.deny = 1 }
        let key = try TestKey()
        let serial = try await Self.enroll(fixture, key)
        // Method policies are kept in the SQLite store only (docs/configuration.md, "Login methods").
        if backend == .sqlite {
            let store = try Store.open(fixture.configuration.store.paths, .migrate)
            try store.setMethodPolicy("root", try #require(LoginMethods(parsing: "otp,fido")))
        }
        try await fixture.withClient { client in
            if backend == .sqlite {
                let preflight = try await client.call(.post, "/v1/preflight", ["user": "root"], bearer: fixture.host)
                #expect(preflight["methods"] as? [String] == ["otp", "fido"], "\(preflight.text)")
            }

            let first = try await Self.challenge(client, fixture.host)
            let declined = try await client.call(.post, "/v1/fido/verify",
                                                 ["user": "root", "id": try #require(first.string("id")), "serial": serial, "declined": true],
                                                 bearer: fixture.host)
            #expect(declined["locked_now"] as? Bool == true, "deny=1: \(declined.text)")
            let locked = try await Self.challenge(client, fixture.host)
            #expect((locked["credentials"] as? [Any])?.isEmpty == true, "\(locked.text)")
        }
    }

    @Test("Admins keep and list FIDO credentials (securotp --server import and fido export); hosts may not", arguments: Backend.tested)
    func adminRoutes(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        let key = try TestKey()
        try await fixture.withClient { client in
            let body: [String: Any] = ["credentials": [["credential": key.credential.u2fField, "origin": TestKey.origin]], "source": "pamu2fcfg"]
            let byHost = try await client.call(.post, "/v1/users/root/fido", body, bearer: fixture.host)
            #expect(byHost.status == 403, "\(byHost.text)")
            let added = try await client.call(.post, "/v1/users/root/fido", body, bearer: fixture.admin)
            #expect(added.status == 201, "\(added.text)")
            let again = try await client.call(.post, "/v1/users/root/fido", body, bearer: fixture.admin)
            #expect(again.status == 400, "the same key handle twice: \(again.text)")
            let bad = try await client.call(.post, "/v1/users/root/fido", ["credentials": [["credential": "x,y,es256,", "origin": TestKey.origin]],
                                                                          "source": "pamu2fcfg"], bearer: fixture.admin)
            #expect(bad.status == 400, "\(bad.text)")

            let listed = try await client.call(.get, "/v1/users/root/fido", bearer: fixture.admin)
            let credentials = try #require(listed["credentials"] as? [[String: Any]], "\(listed.text)")
            #expect(credentials.count == 1 && credentials.first?["credential"] as? String == key.credential.u2fField, "\(listed.text)")
            #expect(credentials.first?["state"] as? String == "active" && credentials.first?["origin"] as? String == TestKey.origin)
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "root"], bearer: fixture.host)
            #expect(preflight["fido"] as? Bool == true, "\(preflight.text)")
        }
    }
}
