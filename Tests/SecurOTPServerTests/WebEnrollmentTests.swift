import Foundation
import Logging
import SecurOTPCore
@testable import SecurOTPPostgres
import SecurOTPServer
import SecurOTPService
import SecurOTPStore
import Testing

/// The few CBOR heads a software authenticator writes (tests only).
enum TestCBOR {
    static func head(_ major: UInt8, _ value: UInt64) -> [UInt8] {
        switch value {
        case 0..<24: return [major << 5 | UInt8(value)]
        case 24..<0x100: return [major << 5 | 24, UInt8(value)]
        case 0x100..<0x1_0000: return [major << 5 | 25, UInt8(value >> 8), UInt8(value & 0xff)]
        default: return [major << 5 | 26] + (0..<4).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xff) }
        }
    }
    static func int(_ n: Int64) -> [UInt8] { n >= 0 ? head(0, UInt64(n)) : head(1, UInt64(-1 - n)) }
    static func bytes(_ b: [UInt8]) -> [UInt8] { head(2, UInt64(b.count)) + b }
    static func text(_ t: String) -> [UInt8] { head(3, UInt64(t.utf8.count)) + Array(t.utf8) }
    static func map(_ members: [([UInt8], [UInt8])]) -> [UInt8] { head(5, UInt64(members.count)) + members.flatMap { $0.0 + $0.1 } }
}

/// A passkey as a browser makes it (`navigator.credentials.create`, attestation "none"): a
/// P-256 key from OpenSSL, client data and attestation object built by hand, so the validator's
/// parser is checked against bytes it did not write.
struct SoftPasskey {
    let privateKeyPEM: String
    let publicKey: [UInt8]
    /// Random, as an authenticator's: a credential id is registered once (schema 9).
    let credentialID: [UInt8]

    init() throws {
        credentialID = (0..<48).map { _ in UInt8.random(in: 0...255) }
        let pair = try #require(PushRules.generateKeyPair())
        privateKeyPEM = pair.privateKeyPEM
        publicKey = pair.publicKey
    }

    var coseKey: [UInt8] {
        let point = Array(publicKey.suffix(64))
        return TestCBOR.map([(TestCBOR.int(1), TestCBOR.int(2)), (TestCBOR.int(3), TestCBOR.int(-7)), (TestCBOR.int(-1), TestCBOR.int(1)),
                             (TestCBOR.int(-2), TestCBOR.bytes(Array(point[0..<32]))), (TestCBOR.int(-3), TestCBOR.bytes(Array(point[32..<64])))])
    }

    func authenticatorData(rpID: String, flags: UInt8 = 0x45, key: [UInt8]? = nil, id: [UInt8]? = nil) -> [UInt8] {
        let id = id ?? credentialID
        return PushRules.sha256(Array(rpID.utf8)) + [flags, 0, 0, 0, 0] + Array(repeating: 0, count: 16)
            + [UInt8(id.count >> 8), UInt8(id.count & 0xff)] + id + (key ?? coseKey)
    }

    /// `navigator.credentials.get`: authenticator data (37 bytes), client data and signature, base64url.
    func assertion(challenge: [UInt8], origin: String = "http://localhost:8080", rpID: String = "localhost", flags: UInt8 = 0x05,
                   counter: UInt8 = 1) throws -> [String: String] {
        let authData = PushRules.sha256(Array(rpID.utf8)) + [flags, 0, 0, 0, counter]
        let clientData = SoftPasskey.clientData(type: "webauthn.get", challenge: challenge, origin: origin)
        let signature = try #require(PushRules.sign(authData + PushRules.sha256(clientData), privateKeyPEM: privateKeyPEM))
        return ["credential_id": PushRules.base64URLEncode(credentialID), "authenticator_data": PushRules.base64URLEncode(authData),
                "client_data_json": PushRules.base64URLEncode(clientData), "signature": PushRules.base64URLEncode(signature)]
    }

    static func attestationObject(_ authData: [UInt8], fmt: String = "none") -> [UInt8] {
        TestCBOR.map([(TestCBOR.text("fmt"), TestCBOR.text(fmt)), (TestCBOR.text("attStmt"), TestCBOR.map([])),
                      (TestCBOR.text("authData"), TestCBOR.bytes(authData))])
    }

    static func clientData(type: String = "webauthn.create", challenge: [UInt8], origin: String, extra: String = "") -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(PushRules.base64URLEncode(challenge))","origin":"\#(origin)"\#(extra)}"#.utf8)
    }
}

@Suite("Phones without an app: public_url and passkey registration")
struct WebEnrollmentTests {
    static let origin = "https://otp.example.com"
    static let rpID = "otp.example.com"
    static let challenge = Array((0..<32).map { UInt8($0 * 3) })

    @Test("public_url: https with a host name, or http to localhost; origin and RP id from it")
    func publicURL() throws {
        let parsed = try PublicURL.parse("https://OTP.example.com/").get()
        #expect(parsed.origin == Self.origin && parsed.rpID == Self.rpID)
        #expect(try PublicURL.parse("https://otp.example.com:443").get().origin == Self.origin)
        #expect(try PublicURL.parse("https://otp.example.com:8443").get().origin == "https://otp.example.com:8443")
        #expect(try PublicURL.parse("http://localhost:8080").get().rpID == "localhost")
        #expect(try PublicURL.parse("https://otp.example.com").get().activationURL(code: "ABCD-EFGH-JKMN-PQRS")
            == "https://otp.example.com/app/#enroll=ABCD-EFGH-JKMN-PQRS")
        for bad in ["http://otp.example.com", "https://192.0.2.1", "http://127.0.0.1:8080", "ftp://otp.example.com", "https://otp.example.com/app",
                    "https://user@otp.example.com", "https://otp.example.com?x", "https://otp.example.com:0", "https://", "otp.example.com",
                    "https://otp_example.com", "https://otp.example.com:08443", "https://otp.example.com:+443", "https://otp.example.com:65536",
                    "https://-otp.example.com", "http://otp.localhost:8080"] {
            guard case .failure(let error) = PublicURL.parse(bad) else { Issue.record("accepted \(bad)"); continue }
            #expect(error.message.contains("public_url"))
        }
    }

    @Test("One origin rule: every public_url the validator takes gives an origin the module's web_origin= and approvals take, with the same RP id")
    func oneOriginRule() throws {
        for text in ["https://otp.example.com", "HTTPS://Otp.Example.com/", "https://otp.example.com:443", "https://otp.example.com:8443",
                     "http://localhost:8080", "http://localhost", "https://a-b.example"] {
            let url = try PublicURL.parse(text).get()
            #expect(ClientData.webRPID(origin: url.origin) == url.rpID, "\(text) → \(url.origin)")
        }
    }

    @Test("securotpd.conf public_url sets the push policy's; a bad one names where it came from")
    func configuration() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(key: "public_url", value: "https://otp.example.com", origin: "/etc/securotp/securotpd.conf:3")
        #expect(configuration.push.publicURL?.origin == Self.origin)
        #expect(throws: ServiceError.self) { try configuration.apply(key: "public_url", value: "http://otp.example.com", origin: "--public-url") }
        do { try configuration.apply(key: "public_url", value: "http://otp.example.com", origin: "--public-url") } catch {
            #expect(error.message.hasPrefix("--public-url: public_url: plain http"), "\(error)")
        }
    }

    @Test("device add web: true answers the activation URL; without public_url a 409 saying what to set")
    func webDeviceAdd() async throws {
        for publicURL in [nil, "https://otp.example.com"] {
            let fixture = try await ValidatorFixture.make { configuration in
                if let publicURL { configuration.push.publicURL = try? PublicURL.parse(publicURL).get() }
            }
            try await fixture.withClient { client in
                let added = try await client.call(.post, "/v1/users/alice/devices", ["name": "phone", "web": true], bearer: fixture.admin)
                if publicURL == nil {
                    #expect(added.status == 409 && added.text.contains("public_url"), "\(added.text)")
                } else {
                    #expect(added.status == 201, "\(added.text)")
                    let code = try #require(added.string("activation_code"))
                    #expect(added.string("activation_url") == "https://otp.example.com/app/#enroll=" + code)
                }
                let plain = try await client.call(.post, "/v1/users/alice/devices", ["name": "laptop"], bearer: fixture.admin)
                #expect(plain.status == 201 && plain.string("activation_url") == nil, "\(plain.text)")
            }
            await fixture.cleanUp()
        }
    }

    func register(_ passkey: SoftPasskey, clientData: [UInt8]? = nil, authData: [UInt8]? = nil, attestation: [UInt8]? = nil,
                  id: [UInt8]? = nil) -> Result<WebAuthnRegistration.Credential, WebAuthnRegistration.Refusal> {
        WebAuthnRegistration.verify(clientDataJSON: clientData ?? SoftPasskey.clientData(challenge: Self.challenge, origin: Self.origin),
                                    attestationObject: attestation ?? SoftPasskey.attestationObject(authData ?? passkey.authenticatorData(rpID: Self.rpID)),
                                    credentialID: id ?? passkey.credentialID, expectedChallenge: Self.challenge, expectedOrigin: Self.origin,
                                    expectedRPID: Self.rpID)
    }

    @Test("a browser's registration (fmt none) gives the passkey's SPKI; each wrong part is refused with its reason")
    func registration() throws {
        let passkey = try SoftPasskey()
        let accepted = try register(passkey).get()
        #expect(accepted.publicKey == passkey.publicKey && accepted.credentialID == passkey.credentialID)
        // The key the registration yields verifies an ES256 signature made with the passkey.
        let message = Array("checked".utf8)
        let signature = try #require(PushRules.sign(message, privateKeyPEM: passkey.privateKeyPEM))
        #expect(ApprovalAssertion.es256Verify(publicKey: accepted.publicKey, message: message, signature: signature))
        // Packed attestation from a real authenticator: the statement is ignored.
        #expect(throws: Never.self) { try register(passkey, attestation: TestCBOR.map([(TestCBOR.text("fmt"), TestCBOR.text("packed")),
            (TestCBOR.text("attStmt"), TestCBOR.map([(TestCBOR.text("alg"), TestCBOR.int(-7)), (TestCBOR.text("sig"), TestCBOR.bytes([1, 2]))])),
            (TestCBOR.text("authData"), TestCBOR.bytes(passkey.authenticatorData(rpID: Self.rpID)))])).get() }

        let cases: [(WebAuthnRegistration.Refusal, Result<WebAuthnRegistration.Credential, WebAuthnRegistration.Refusal>)] = [
            (.wrongOrigin, register(passkey, clientData: SoftPasskey.clientData(challenge: Self.challenge, origin: "https://evil.example"))),
            (.wrongChallenge, register(passkey, clientData: SoftPasskey.clientData(challenge: Array(Self.challenge.reversed()), origin: Self.origin))),
            (.wrongType, register(passkey, clientData: SoftPasskey.clientData(type: "webauthn.get", challenge: Self.challenge, origin: Self.origin))),
            (.badClientData, register(passkey, clientData: SoftPasskey.clientData(challenge: Self.challenge, origin: Self.origin, extra: #","crossOrigin":true"#))),
            (.wrongRPID, register(passkey, authData: passkey.authenticatorData(rpID: "evil.example"))),
            (.notVerified, register(passkey, authData: passkey.authenticatorData(rpID: Self.rpID, flags: 0x41))),
            (.notPresent, register(passkey, authData: passkey.authenticatorData(rpID: Self.rpID, flags: 0x44))),
            (.noCredential, register(passkey, authData: passkey.authenticatorData(rpID: Self.rpID, flags: 0x05))),
            (.wrongCredentialID, register(passkey, id: [1, 2, 3])),
            (.unsupportedKey, register(passkey, authData: passkey.authenticatorData(rpID: Self.rpID, key: TestCBOR.map([
                (TestCBOR.int(1), TestCBOR.int(3)), (TestCBOR.int(3), TestCBOR.int(-257)), (TestCBOR.int(-1), TestCBOR.bytes([1])),
                (TestCBOR.int(-2), TestCBOR.bytes([1, 0, 1]))])))),
            (.badAttestation, register(passkey, authData: passkey.authenticatorData(rpID: Self.rpID) + [0])),
            (.badAttestation, register(passkey, authData: Array(passkey.authenticatorData(rpID: Self.rpID).dropLast()))),
            (.badAttestation, register(passkey, attestation: TestCBOR.map([(TestCBOR.text("fmt"), TestCBOR.text("none"))]))),
        ]
        for (expected, result) in cases {
            guard case .failure(let refusal) = result else { Issue.record("accepted; expected \(expected)"); continue }
            #expect(refusal == expected)
        }
    }

    @Test("the CBOR reader takes canonical definite-length items only, bounded")
    func cborStrictness() {
        #expect(CBORReader.decodeAll(TestCBOR.map([(TestCBOR.int(-2), TestCBOR.bytes([9]))])) == .map([(.negative(1), .bytes([9]))]))
        #expect(CBORReader.decodeAll([0x18, 0x18]) == .unsigned(24))
        #expect(CBORReader.decodeAll([0xf5]) == .bool(true))
        let refused: [[UInt8]] = [
            [], [0x18, 0x17],             // 23 not in its shortest form
            [0x19, 0x00, 0xff],           // nor 255
            [0x5f, 0x41, 0x00, 0xff],     // indefinite-length bytes
            [0xc0, 0x00],                 // a tag
            [0xf9, 0x3c, 0x00],           // a float
            [0xa2, 0x01, 0x00, 0x01, 0x00], // duplicate keys
            [0x44, 0x01],                 // truncated
            [0x00, 0x00],                 // trailing bytes
            [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // an array of 2^64-1 elements
            [0x7a, 0xff, 0xff, 0xff, 0xff], // a 4 GiB string
            Array(repeating: 0x81, count: 100) + [0x00], // nested too deep
            [0x62, 0xc3, 0x28],           // text that is not UTF-8
        ]
        for input in refused { #expect(CBORReader.decodeAll(input) == nil, "\(input.prefix(8))") }
    }

    /// A web device added and its enrollment options fetched.
    static func webDevice(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String) async throws -> (code: String, options: APIClient.Answer) {
        let added = try await client.call(.post, "/v1/users/\(user)/devices", ["name": "phone", "web": true], bearer: fixture.admin)
        let code = try #require(added.string("activation_code"), "\(added.text)")
        let options = try await client.call(.post, "/v1/web/enroll/options", ["activation_code": code], origin: "http://localhost:8080")
        #expect(options.status == 200, "\(options.text)")
        return (code, options)
    }

    static func enrollBody(_ passkey: SoftPasskey, code: String, challenge: String, origin: String = "http://localhost:8080",
                           rpID: String = "localhost", flags: UInt8 = 0x45) -> [String: Any] {
        let challengeBytes = PushRules.base64URLDecode(challenge) ?? []
        return ["activation_code": code, "credential_id": PushRules.base64URLEncode(passkey.credentialID),
                "client_data_json": PushRules.base64URLEncode(SoftPasskey.clientData(challenge: challengeBytes, origin: origin)),
                "attestation_object": PushRules.base64URLEncode(SoftPasskey.attestationObject(passkey.authenticatorData(rpID: rpID, flags: flags)))]
    }

    @Test("web enrollment: options then the passkey's registration, accepted once; wrong origin, RP id, UV or a used challenge refused", arguments: Backend.tested)
    func webEnrollment(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.push.publicURL = try? PublicURL.parse("http://localhost:8080").get() }
        try await fixture.withClient { client in
            let unknown = try await client.call(.post, "/v1/web/enroll/options", ["activation_code": "ABCD-EFGH-JKMN-PQRS"])
            #expect(unknown.status == 404, "\(unknown.text)")
            let passkey = try SoftPasskey()
            var (code, options) = try await Self.webDevice(client, fixture, "alice")
            #expect(options.string("rp_id") == "localhost" && options.string("user") == "alice" && options.string("validator") == "localhost")
            #expect(PushRules.base64URLDecode(options.string("user_id") ?? "") == Array((options.string("device") ?? "-").utf8))
            // Each refusal takes the challenge: the page asks for new options.
            let refusals: [(String, [String: Any])] = [
                ("wrong_origin", Self.enrollBody(passkey, code: code, challenge: options.string("challenge") ?? "", origin: "http://localhost:9999")),
                ("wrong_rp_id", Self.enrollBody(passkey, code: code, challenge: options.string("challenge") ?? "", rpID: "example.com")),
                ("not_verified", Self.enrollBody(passkey, code: code, challenge: options.string("challenge") ?? "", flags: 0x41)),
            ]
            for (reason, body) in refusals {
                options = try await client.call(.post, "/v1/web/enroll/options", ["activation_code": code])
                var wrong = body
                let fresh = PushRules.base64URLDecode(options.string("challenge") ?? "") ?? []
                if reason != "wrong_challenge" {
                    let origin = reason == "wrong_origin" ? "http://localhost:9999" : "http://localhost:8080"
                    wrong["client_data_json"] = PushRules.base64URLEncode(SoftPasskey.clientData(challenge: fresh, origin: origin))
                }
                let refused = try await client.call(.post, "/v1/web/enroll", wrong)
                #expect(refused.status == 400 && refused.text.contains(reason), "\(reason): \(refused.text)")
                // The challenge was taken: the right registration over it is refused too.
                let again = try await client.call(.post, "/v1/web/enroll", Self.enrollBody(passkey, code: code, challenge: options.string("challenge") ?? ""))
                #expect(again.status == 400 && again.text.contains("wrong_challenge"), "\(again.text)")
            }
            options = try await client.call(.post, "/v1/web/enroll/options", ["activation_code": code])
            let good = Self.enrollBody(passkey, code: code, challenge: options.string("challenge") ?? "")
            let enrolled = try await client.call(.post, "/v1/web/enroll", good, origin: "http://localhost:8080")
            #expect(enrolled.status == 200 && enrolled.string("state") == "active" && enrolled.string("user") == "alice", "\(enrolled.text)")
            let replayed = try await client.call(.post, "/v1/web/enroll", good)
            #expect(replayed.status == 404, "the code is used: \(replayed.text)")
            let reopened = try await client.call(.post, "/v1/web/enroll/options", ["activation_code": code])
            #expect(reopened.status == 404, "\(reopened.text)")
            let list = try await client.call(.get, "/v1/devices?user=alice", bearer: fixture.admin)
            let device = try #require((list["devices"] as? [[String: Any]])?.first)
            #expect(device["aaid"] as? String == "FFFF#0002" && device["state"] as? String == "active"
                    && device["public_key"] as? String == PushRules.base64URLEncode(passkey.publicKey), "\(list.text)")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflight["push"] as? Bool == true, "\(preflight.text)")

            // The same passkey (credential id) again, for another user: refused, the code kept.
            var second = try await Self.webDevice(client, fixture, "mallory")
            let repeated = try await client.call(.post, "/v1/web/enroll", Self.enrollBody(passkey, code: second.code, challenge: second.options.string("challenge") ?? ""))
            #expect(repeated.status == 409 && repeated.text.contains("credential_registered"), "\(repeated.text)")
            second.options = try await client.call(.post, "/v1/web/enroll/options", ["activation_code": second.code])
            let another = try await client.call(.post, "/v1/web/enroll",
                                                Self.enrollBody(try SoftPasskey(), code: second.code, challenge: second.options.string("challenge") ?? ""))
            #expect(another.status == 200, "another passkey with the same code: \(another.text)")
            let audit = try await client.call(.get, "/v1/audit?user=mallory", bearer: fixture.admin)
            #expect(audit.text.contains("credential id already registered to device"), "\(audit.text)")

            // Another site's page is refused, whatever it sends.
            (code, options) = try await Self.webDevice(client, fixture, "bob")
            let foreign = try await client.call(.post, "/v1/web/enroll/options", ["activation_code": code], origin: "https://evil.example")
            #expect(foreign.status == 403, "\(foreign.text)")
        }
        await fixture.cleanUp()
    }

    @Test("rate_limit_web: an address over its allowance on the credential-less /v1/web routes gets 429 rate_limited; other routes are not held to it")
    func webRateLimit() async throws {
        let fixture = try await ValidatorFixture.make(.sqlite) {
            $0.push.publicURL = try? PublicURL.parse("http://localhost:8080").get()
            $0.webRequestsPerMinute = 3
        }
        try await fixture.withClient { client in
            for _ in 1...3 {
                let options = try await client.call(.post, "/v1/web/session/options")
                #expect(options.status == 200, "\(options.text)")
            }
            for path in ["/v1/web/session/options", "/v1/web/enroll/options", "/v1/web/enroll", "/v1/web/session"] {
                let refused = try await client.call(.post, path, ["activation_code": "ABCD-EFGH-JKMN-PQRS"])
                #expect(refused.status == 429 && (refused["error"] as? [String: Any])?["code"] as? String == "rate_limited", "\(path): \(refused.text)")
            }
            let status = try await client.call(.get, "/v1/status", bearer: fixture.admin)
            #expect(status.status == 200, "\(status.text)")
        }
    }

    @Test("PostgreSQL schema 7: a database where two web devices share a credential id is refused naming them, nothing changed; unlinked, it migrates", .needsPostgreSQL)
    func postgresRepeatedCredentialIDs() async throws {
        let name = "securotp_test_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        try TestPostgres.sql("CREATE DATABASE \(name)")
        defer { try? TestPostgres.sql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        // Schema 6 as an older securotpd left it, with one id registered twice.
        for statement in PostgresSchema.migrations.prefix(6).flatMap({ $0 }) { try TestPostgres.sql(statement, database: name) }
        try TestPostgres.sql("""
            CREATE TABLE securotp_schema (version INTEGER NOT NULL); INSERT INTO securotp_schema VALUES (6);
            INSERT INTO devices (id, "user", state, created) VALUES ('dev-old', 'alice', 'active', 100), ('dev-new', 'mallory', 'active', 200), ('dev-other', 'bob', 'active', 150);
            INSERT INTO web_devices (device, credential_id) VALUES ('dev-new', '\\x0102'), ('dev-old', '\\x0102'), ('dev-other', '\\x0304');
            """, database: name)
        let directory = try ValidatorFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var settings = Settings()
        settings.paths = StorePaths(stateDirectory: directory)
        _ = try KeyFile.create(settings.paths.keyFile)
        var logger = Logger(label: "securotp-test")
        logger.logLevel = .critical
        do {
            let service = try await PostgresTokenService.connect(url: TestPostgres.url(database: name), settings: settings, logger: logger)
            await service.close()
            Issue.record("a repeated credential id was migrated over")
        } catch {
            #expect(error.message.contains("'dev-old' of 'alice', 'dev-new' of 'mallory'") && !error.message.contains("dev-other"), "\(error.message)")
        }
        #expect(try TestPostgres.value("SELECT max(version) FROM securotp_schema", database: name) == "6", "left as it was")
        try TestPostgres.sql("UPDATE web_devices SET credential_id = NULL WHERE device = 'dev-new'", database: name)
        let service = try await PostgresTokenService.connect(url: TestPostgres.url(database: name), settings: settings, logger: logger)
        await service.close()
        #expect(try TestPostgres.value("SELECT count(*) FROM web_devices", database: name) == "3", "every row kept")
        #expect(throws: (any Error).self, "the index refuses a repeat from now on") {
            try TestPostgres.sql("UPDATE web_devices SET credential_id = '\\x0304' WHERE device = 'dev-old'", database: name)
        }
    }

    /// Enrolls `passkey` for `user` as a web device; its id.
    static func enroll(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String, _ passkey: SoftPasskey) async throws -> String {
        let (code, options) = try await webDevice(client, fixture, user)
        let enrolled = try await client.call(.post, "/v1/web/enroll", enrollBody(passkey, code: code, challenge: options.string("challenge") ?? ""))
        #expect(enrolled.status == 200, "\(enrolled.text)")
        return try #require(enrolled.string("device"))
    }

    static func session(_ client: APIClient, _ passkey: SoftPasskey, origin: String = "http://localhost:8080",
                        flags: UInt8 = 0x05, counter: UInt8 = 1) async throws -> (body: [String: String], answer: APIClient.Answer) {
        let options = try await client.call(.post, "/v1/web/session/options", origin: "http://localhost:8080")
        #expect(options.status == 200 && options.string("rp_id") == "localhost", "\(options.text)")
        let challenge = PushRules.base64URLDecode(options.string("challenge") ?? "") ?? []
        let body = try passkey.assertion(challenge: challenge, origin: origin, flags: flags, counter: counter)
        return (body, try await client.call(.post, "/v1/web/session", body))
    }

    /// The page's approval of `request` (as /v1/device/requests listed it): an assertion over
    /// the statement's hash, with the request id, decision and number beside it.
    static func approvalBody(_ passkey: SoftPasskey, request: [String: Any], device: String, number: String = "492817",
                             origin: String = "http://localhost:8080", counter: UInt8) throws -> [String: Any] {
        func field(_ key: String) -> String { request[key] as? String ?? "" }
        let statement = PushRules.statement(id: field("id"), user: field("user"), host: field("host"), service: field("service"),
                                            remoteAddress: field("remote_address"), tty: field("tty"), command: field("command"),
                                            nonce: field("nonce"), number: number, expires: Int64(request["expires"] as? Int ?? 0), device: device)
        var body: [String: Any] = try passkey.assertion(challenge: PushRules.sha256(statement), origin: origin, counter: counter)
        body["credential_id"] = nil
        body["id"] = field("id")
        body["decision"] = "approve"
        body["number"] = number
        return body
    }

    @Test("web session: the assertion's signature counter is recorded once and must advance (a cloned passkey's is refused, 0 after a counter too: WebAuthn §6.1.1, as for FIDO keys); a passkey that keeps none sends 0 after 0 and passes", arguments: Backend.tested)
    func webSessionCounter(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.push.publicURL = try? PublicURL.parse("http://localhost:8080").get() }
        try await fixture.withClient { client in
            let passkey = try SoftPasskey()
            let device = try await Self.enroll(client, fixture, "alice", passkey)
            let first = try await Self.session(client, passkey, counter: 5)
            #expect(first.answer.status == 200, "\(first.answer.text)")
            for stale: UInt8 in [5, 3] {
                let cloned = try await Self.session(client, passkey, counter: stale)
                #expect(cloned.answer.status == 401, "counter \(stale) after 5: \(cloned.answer.text)")
            }
            let audit = try await client.call(.get, "/v1/audit?user=alice", bearer: fixture.admin)
            #expect(audit.text.contains("signature counter did not advance"), "\(audit.text)")
            let next = try await Self.session(client, passkey, counter: 6)
            #expect(next.answer.status == 200, "\(next.answer.text)")
            let session = try #require(next.answer.string("session"))
            // 0 after a counter was seen: a clone that keeps none, or a counter reset. Until
            // this was one rule (SignatureCounter), approvals took it and FIDO keys did not.
            let zeroAfterSix = try await Self.session(client, passkey, counter: 0)
            #expect(zeroAfterSix.answer.status == 401, "\(zeroAfterSix.answer.text)")
            let uncountedPasskey = try SoftPasskey()
            _ = try await Self.enroll(client, fixture, "bob", uncountedPasskey)
            for _ in 1...2 {
                let uncounted = try await Self.session(client, uncountedPasskey, counter: 0)
                #expect(uncounted.answer.status == 200, "\(uncounted.answer.text)")
            }

            // The session's counter is the device's: an approval signed at 6 is a replay.
            let opened = try await PushAPITests.open(client, fixture, "alice")
            #expect(opened.status == 201, "\(opened.text)")
            let listed = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: session)
            let request = try #require((listed["requests"] as? [[String: Any]])?.first, "\(listed.text)")
            let approval = try Self.approvalBody(passkey, request: request, device: device, counter: 6)
            let replayed = try await client.call(.post, "/v1/device/answer", approval, bearer: session)
            #expect(replayed.string("state") == "failed" && replayed.string("reason") == "signature counter did not advance", "\(replayed.text)")
        }
        await fixture.cleanUp()
    }

    @Test("web session: an assertion over a single-use challenge gives sotp_w_; it reads and approves requests; the host gets FFFF#0002 with its origin", arguments: Backend.tested)
    func webSessionAndApproval(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.push.publicURL = try? PublicURL.parse("http://localhost:8080").get() }
        try await fixture.withClient { client in
            let passkey = try SoftPasskey()
            let device = try await Self.enroll(client, fixture, "alice", passkey)
            // Refused: another passkey, UV missing, a wrong origin; each takes its challenge.
            let foreign = try await Self.session(client, try SoftPasskey())
            #expect(foreign.answer.status == 401, "\(foreign.answer.text)")
            let noUV = try await Self.session(client, passkey, flags: 0x01)
            #expect(noUV.answer.status == 401, "\(noUV.answer.text)")
            let elsewhere = try await Self.session(client, passkey, origin: "http://localhost:9999")
            #expect(elsewhere.answer.status == 401, "\(elsewhere.answer.text)")

            let (body, answer) = try await Self.session(client, passkey)
            #expect(answer.status == 200 && answer.string("device") == device && answer.string("user") == "alice", "\(answer.text)")
            let session = try #require(answer.string("session"))
            #expect(session.hasPrefix("sotp_w_"))
            let replayed = try await client.call(.post, "/v1/web/session", body)
            #expect(replayed.status == 401, "a session challenge is taken once: \(replayed.text)")

            let opened = try await PushAPITests.open(client, fixture, "alice")
            #expect(opened.status == 201, "\(opened.text)")
            let listed = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: session, origin: "http://localhost:8080")
            let request = try #require((listed["requests"] as? [[String: Any]])?.first, "\(listed.text)")
            let foreignPage = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: session, origin: "https://evil.example")
            #expect(foreignPage.status == 403, "\(foreignPage.text)")
            let forged = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: "sotp_w_" + String(repeating: "A", count: 43))
            #expect(forged.status == 401, "\(forged.text)")

            // The page's approval: the statement's hash as the challenge of a webauthn.get.
            func field(_ key: String) -> String { request[key] as? String ?? "" }
            let approval = try Self.approvalBody(passkey, request: request, device: device, counter: 2)
            let approved = try await client.call(.post, "/v1/device/answer", approval, bearer: session, origin: "http://localhost:8080")
            #expect(approved.string("state") == "approved", "\(approved.text)")
            let waited = try await client.call(.post, "/v1/push/wait", ["id": field("id"), "wait": 1], bearer: fixture.host)
            let handed = try #require(waited["approval"] as? [String: Any], "\(waited.text)")
            #expect(handed["aaid"] as? String == "FFFF#0002" && handed["origin"] as? String == "http://localhost:8080"
                    && handed["device"] as? String == device, "\(waited.text)")

            // An assertion made as the authenticator's (securotp.push.approve) is not a web device's.
            let second = try await PushAPITests.open(client, fixture, "alice")
            let secondID = try #require(second.string("id"))
            let pending = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: session)
            let next = try #require((pending["requests"] as? [[String: Any]])?.first { $0["id"] as? String == secondID })
            let wrongOrigin = try Self.approvalBody(passkey, request: next, device: device, origin: "http://localhost:9999", counter: 3)
            let refused = try await client.call(.post, "/v1/device/answer", wrongOrigin, bearer: session)
            #expect(refused.string("state") == "failed" && refused.string("reason") == "wrong_origin", "\(refused.text)")
        }
        await fixture.cleanUp()
    }
}
