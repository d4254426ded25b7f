import Foundation
import Hummingbird
import SecurOTPCore
import HummingbirdTesting
import SecurOTPServer
import SecurOTPService
import SecurOTPStore
import Testing

/// A device as securotp-authenticator acts (docs/push.md): a P-256 key, and approvals signed
/// over the statement built from what the device was shown and the number the user typed.
struct TestDevice: Sendable {
    let privateKeyPEM: String
    let publicKey: [UInt8]
    var id = ""
    var credential = ""

    init() throws {
        let pair = try #require(PushRules.generateKeyPair())
        privateKeyPEM = pair.privateKeyPEM
        publicKey = pair.publicKey
    }

    /// The JSON body of an approval of `request` (a `device/requests` entry) with `number`.
    func approval(of request: [String: Any], number: String, counter: UInt32 = 0, userVerified: Bool = true) throws -> [String: Any] {
        func field(_ key: String) -> String { request[key] as? String ?? "" }
        let statement = PushRules.statement(id: field("id"), user: field("user"), host: field("host"), service: field("service"),
                                            remoteAddress: field("remote_address"), tty: field("tty"), command: field("command"),
                                            nonce: field("nonce"), number: number, expires: Int64(request["expires"] as? Int ?? 0), device: id)
        let challenge = PushRules.base64URLEncode(PushRules.sha256(statement))
        let clientData = Array(#"{"type":"securotp.push.approve","challenge":"\#(challenge)","origin":"securotp:push"}"#.utf8)
        let authenticatorData = PushRules.sha256(Array("securotp-push".utf8)) + [userVerified ? 0x05 : 0x01]
            + [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        let signature = try #require(PushRules.sign(authenticatorData + PushRules.sha256(clientData), privateKeyPEM: privateKeyPEM))
        return ["id": field("id"), "decision": "approve", "number": number, "authenticator_data": PushRules.base64URLEncode(authenticatorData),
                "client_data_json": PushRules.base64URLEncode(clientData), "signature": PushRules.base64URLEncode(signature)]
    }
}

@Suite("Validator API: push approval")
struct PushAPITests {
    static let nonce = PushRules.base64URLEncode(Array(repeating: 7, count: 32))

    /// Adds and activates a device for `user`.
    static func enrollDevice(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String) async throws -> TestDevice {
        var device = try TestDevice()
        let added = try await client.call(.post, "/v1/users/\(user)/devices", ["name": "laptop"], bearer: fixture.admin)
        #expect(added.status == 201, "\(added.text)")
        let code = try #require(added.string("activation_code"))
        #expect(code.range(of: #"^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$"#, options: .regularExpression) != nil, "\(code)")
        let activated = try await client.call(.post, "/v1/devices/activate", ["activation_code": code.lowercased(),
                                                                            "public_key": PushRules.base64URLEncode(device.publicKey),
                                                                            "user_verification": true])
        #expect(activated.status == 200, "\(activated.text)")
        device.id = try #require(activated.string("device"))
        device.credential = try #require(activated.string("credential"))
        #expect(device.id == added.string("device") && device.credential.hasPrefix("sotp_d_") && activated.string("user") == user)
        return device
    }

    static func open(_ client: APIClient, _ fixture: ValidatorFixture, _ user: String, number: String = "492817",
                     bearer: String? = nil) async throws -> APIClient.Answer {
        try await client.call(.post, "/v1/push", ["user": user, "nonce": nonce, "number": number, "service": "sshd",
                                                  "remote_address": "192.0.2.7", "tty": "ssh", "command": ""], bearer: bearer ?? fixture.host)
    }

    /// Runs `statement` on the fixture's store (SQLite or PostgreSQL); the first column of the first row, as text.
    static func sql(_ fixture: ValidatorFixture, _ statement: String) throws -> String {
        if let database = fixture.database { return try TestPostgres.value(statement, database: database).trimmingCharacters(in: .whitespacesAndNewlines) }
        let database = try SQLiteDatabase(path: fixture.configuration.store.paths.database, create: false)
        let prepared = try database.prepare(statement)
        return try prepared.step() ? prepared.text(0) : ""
    }

    static func pending(_ client: APIClient, _ device: TestDevice, wait: Int = 1) async throws -> [[String: Any]] {
        let answer = try await client.call(.post, "/v1/device/requests", ["wait": wait], bearer: device.credential)
        #expect(answer.status == 200, "\(answer.text)")
        return answer["requests"] as? [[String: Any]] ?? []
    }

    @Test("Activation codes are single-use; an activated device approves once and the host gets the approval once", arguments: Backend.tested)
    func approvalOnce(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let preflightBefore = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflightBefore["push"] == nil, "no device, no push: \(preflightBefore.text)")
            let device = try await Self.enrollDevice(client, fixture, "alice")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflight["push"] as? Bool == true, "\(preflight.text)")

            let opened = try await Self.open(client, fixture, "alice")
            #expect(opened.status == 201, "\(opened.text)")
            let id = try #require(opened.string("id"))
            #expect(id.range(of: "^pr[0-9a-f]{32}$", options: .regularExpression) != nil && opened.string("host") == "web1", "\(opened.text)")
            let requests = try await Self.pending(client, device)
            let request = try #require(requests.first)
            #expect(request["id"] as? String == id && request["number"] == nil && request["host"] as? String == "web1", "never the number")

            let answered = try await client.call(.post, "/v1/device/answer", try device.approval(of: request, number: "492817", counter: 1),
                                                 bearer: device.credential)
            #expect(answered.string("state") == "approved", "\(answered.text)")
            let first = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host)
            #expect(first.string("state") == "consumed" && first["approval"] != nil, "\(first.text)")
            let approval = try #require(first["approval"] as? [String: Any])
            #expect(approval["public_key"] as? String == PushRules.base64URLEncode(device.publicKey) && approval["device"] as? String == device.id)
            let second = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host)
            #expect(second.string("state") == "consumed" && second["approval"] == nil, "handed out once: \(second.text)")
            let result = try await client.call(.post, "/v1/push/result", ["id": id, "accepted": true], bearer: fixture.host)
            #expect(result.status == 204)
            let again = try await client.call(.post, "/v1/push/result", ["id": id, "accepted": true], bearer: fixture.host)
            #expect(again.status == 400, "one result per approval")
        }
    }

    @Test("An accepted push clears the user's count, never a lock in force (Lockout.successClears, as for every way in)", arguments: Backend.tested)
    func acceptedPushKeepsALock(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.store.policy.deny = 3 }
        try await fixture.withClient { client in
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "alice")
            let device = try await Self.enrollDevice(client, fixture, "alice")
            let wrong = Codes.wrongTOTP(secret)
            /// Opens a push, has the device approve it and the host take the approval; returns its id.
            func approved(counter: UInt32) async throws -> String {
                let opened = try await Self.open(client, fixture, "alice")
                let id = try #require(opened.string("id"), "\(opened.text)")
                let request = try #require(try await Self.pending(client, device).first)
                let answered = try await client.call(.post, "/v1/device/answer", try device.approval(of: request, number: "492817", counter: counter),
                                                     bearer: device.credential)
                #expect(answered.string("state") == "approved", "\(answered.text)")
                let taken = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host)
                #expect(taken["approval"] != nil, "\(taken.text)")
                return id
            }

            let first = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": wrong], bearer: fixture.host)
            #expect(first["failures"] as? Int == 1, "\(first.text)")
            let clearing = try await approved(counter: 1)
            let cleared = try await client.call(.post, "/v1/push/result", ["id": clearing, "accepted": true], bearer: fixture.host)
            #expect(cleared.status == 204, "\(cleared.text)")
            let afterClear = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": wrong], bearer: fixture.host)
            #expect(afterClear["failures"] as? Int == 1, "the accepted push cleared the count: \(afterClear.text)")

            // Locked after the push was approved and before the host reported: the lock stays.
            let late = try await approved(counter: 2)
            for _ in 1...2 { _ = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": wrong], bearer: fixture.host) }
            let reported = try await client.call(.post, "/v1/push/result", ["id": late, "accepted": true], bearer: fixture.host)
            #expect(reported.status == 204, "\(reported.text)")
            let locked = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(locked.string("result") == "locked", "an accepted push does not lift a lock in force: \(locked.text)")
        }
    }

    @Test("An activation code works once and not after it expired", arguments: Backend.tested)
    func activationCodes(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.push.activationLifetime = 60 }
        try await fixture.withClient { client in
            let added = try await client.call(.post, "/v1/users/alice/devices", [:], bearer: fixture.admin)
            let code = try #require(added.string("activation_code"))
            let key = PushRules.base64URLEncode(try TestDevice().publicKey)
            // A kind of device no host can check (DeviceType) is refused before the code is used.
            for aaid in ["ABCD#0001", DeviceType.phonePasskey.aaid] {
                let unknown = try await client.call(.post, "/v1/devices/activate", ["activation_code": code, "public_key": key, "aaid": aaid])
                #expect(unknown.status == 400 && unknown.text.contains("not a device this validator can check"), "\(unknown.text)")
            }
            let first = try await client.call(.post, "/v1/devices/activate", ["activation_code": code, "public_key": key])
            #expect(first.status == 200)
            let second = try await client.call(.post, "/v1/devices/activate", ["activation_code": code, "public_key": key])
            #expect(second.status == 401, "single use: \(second.text)")
            let garbage = try await client.call(.post, "/v1/devices/activate", ["activation_code": "not a code", "public_key": key])
            #expect(garbage.status == 401)

            // Expired: the validator's clock moved past the code's lifetime.
            let stale = try await client.call(.post, "/v1/users/bob/devices", [:], bearer: fixture.admin)
            let staleCode = try #require(stale.string("activation_code"))
            fixture.clock.advance(61)
            let expired = try await client.call(.post, "/v1/devices/activate", ["activation_code": staleCode, "public_key": key])
            #expect(expired.status == 401, "\(expired.text)")
            let list = try await client.call(.get, "/v1/devices?user=bob", bearer: fixture.admin)
            #expect((list["devices"] as? [[String: Any]])?.first?["state"] as? String == "pending")
        }
    }

    @Test("A device's answer wakes the host's long-poll at once", arguments: Backend.tested)
    func longPollWakes(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await Self.enrollDevice(client, fixture, "alice")
            let id = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let request = try #require(try await Self.pending(client, device).first)
            let body = try device.approval(of: request, number: "492817")
            let started = Date()
            async let waited = client.call(.post, "/v1/push/wait", ["id": id, "wait": 20], bearer: fixture.host)
            #expect(await fixture.waiters.held(atLeast: 1), "the long-poll never parked")
            _ = try await client.call(.post, "/v1/device/answer", body, bearer: device.credential)
            let answered = Date()
            let answer = try await waited
            let elapsed = Date().timeIntervalSince(started)
            #expect(answer.string("state") == "consumed" && answer["approval"] != nil, "\(answer.text)")
            // Measured from the answer's commit, bounded well under the 20 s wait: a loaded machine (PostgreSQL suites in parallel) slows the calls; a missed wake-up takes the whole 20 s.
            #expect(Date().timeIntervalSince(answered) < 10, "woke \(elapsed) s after the wait began, bound 20 s")

            // A device's wait wakes when a request arrives.
            let deviceStarted = Date()
            async let arriving = client.call(.post, "/v1/device/requests", ["wait": 20], bearer: device.credential)
            #expect(await fixture.waiters.held(atLeast: 1), "the long-poll never parked")
            _ = try await Self.open(client, fixture, "alice")
            let list = try await arriving
            #expect((list["requests"] as? [Any])?.count == 1, "\(list.text)")
            #expect(Date().timeIntervalSince(deviceStarted) < 10)

            // No answer: the wait ends after `wait` seconds, pending.
            let pendingID = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let quiet = Date()
            let timedOut = try await client.call(.post, "/v1/push/wait", ["id": pendingID, "wait": 1], bearer: fixture.host)
            #expect(timedOut.string("state") == "pending")
            #expect(Date().timeIntervalSince(quiet) >= 0.9)
        }
    }

    @Test("One open request per user and host: a new one cancels the earlier", arguments: Backend.tested)
    func oneOpenRequest(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await Self.enrollDevice(client, fixture, "alice")
            let first = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let second = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let requests = try await Self.pending(client, device)
            #expect(requests.map { $0["id"] as? String } == [second])
            let old = try await client.call(.post, "/v1/push/wait", ["id": first, "wait": 1], bearer: fixture.host)
            #expect(old.string("state") == "cancelled")
            let cancel = try await client.call(.post, "/v1/push/cancel", ["id": second], bearer: fixture.host)
            #expect(cancel.string("state") == "cancelled")
            #expect(try await Self.pending(client, device).isEmpty)
        }
    }

    @Test("Wrong numbers are counted on the user's row; the third fails the request", arguments: Backend.tested)
    func wrongNumbers(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await Self.enrollDevice(client, fixture, "alice")
            let id = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let request = try #require(try await Self.pending(client, device).first)
            for attempt in 1...3 {
                let answer = try await client.call(.post, "/v1/device/answer", try device.approval(of: request, number: "000000"), bearer: device.credential)
                #expect(answer.string("state") == (attempt < 3 ? "pending" : "failed") && answer.string("reason") == "wrong number", "\(answer.text)")
            }
            let state = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host)
            #expect(state.string("state") == "failed")
            let right = try await client.call(.post, "/v1/device/answer", try device.approval(of: request, number: "492817"), bearer: device.credential)
            #expect(right.string("state") == "failed", "a failed request stays failed")
            #expect(try Self.sql(fixture, "SELECT failures FROM users WHERE name = 'alice'") == "3", "three failures on alice's row")
        }
    }

    @Test("A host's wait that says the wrong numbers it told of ends at the next one at once, and says the count", arguments: Backend.tested)
    func waitEndsAtAWrongNumber(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await Self.enrollDevice(client, fixture, "alice")
            let id = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let request = try #require(try await Self.pending(client, device).first)
            let wrong = try await client.call(.post, "/v1/device/answer", try device.approval(of: request, number: "000000"), bearer: device.credential)
            #expect(wrong.string("state") == "pending", "\(wrong.text)")
            let started = Date()
            let told = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 10, "wrong_numbers": 0], bearer: fixture.host)
            #expect(told.string("state") == "pending" && told["wrong_numbers"] as? Int == 1, "\(told.text)")
            #expect(Date().timeIntervalSince(started) < 5, "answered at once, not after the wait")
            // Told of one: the wait holds until something new happens (here, its end).
            let held = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1, "wrong_numbers": 1], bearer: fixture.host)
            #expect(held.string("state") == "pending" && held["wrong_numbers"] as? Int == 1, "\(held.text)")
            #expect(Date().timeIntervalSince(started) >= 1)
        }
    }

    @Test("A failed request tells the host why: wrong numbers, or a refused approval (a replayed signature)", arguments: Backend.tested)
    func failedSaysWhy(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await Self.enrollDevice(client, fixture, "alice")
            let first = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let firstRequest = try #require(try await Self.pending(client, device).first)
            let approval = try device.approval(of: firstRequest, number: "492817", counter: 1)
            #expect(try await client.call(.post, "/v1/device/answer", approval, bearer: device.credential).string("state") == "approved")
            _ = try await client.call(.post, "/v1/push/wait", ["id": first, "wait": 1], bearer: fixture.host)
            // The first approval's signed answer replayed on a new request.
            let second = try #require(try await Self.open(client, fixture, "alice").string("id"))
            var replayed = approval
            replayed["id"] = second
            let refused = try await client.call(.post, "/v1/device/answer", replayed, bearer: device.credential)
            #expect(refused.string("state") == "failed", "\(refused.text)")
            let replayState = try await client.call(.post, "/v1/push/wait", ["id": second, "wait": 1], bearer: fixture.host)
            #expect(replayState.string("state") == "failed" && replayState.string("reason") == "approval_refused", "\(replayState.text)")
            // Three wrong numbers.
            let third = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let request = try #require(try await Self.pending(client, device).first)
            for _ in 1...3 { _ = try await client.call(.post, "/v1/device/answer", try device.approval(of: request, number: "000000"), bearer: device.credential) }
            let wrongState = try await client.call(.post, "/v1/push/wait", ["id": third, "wait": 1], bearer: fixture.host)
            #expect(wrongState.string("state") == "failed" && wrongState.string("reason") == "wrong_number", "\(wrongState.text)")
        }
    }

    @Test("A forged signature is refused, and a device cannot answer another user's request", arguments: Backend.tested)
    func foreignAndForged(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let alice = try await Self.enrollDevice(client, fixture, "alice")
            var mallory = try await Self.enrollDevice(client, fixture, "mallory")
            let id = try #require(try await Self.open(client, fixture, "alice").string("id"))
            let request = try #require(try await Self.pending(client, alice).first)
            #expect(try await Self.pending(client, mallory).isEmpty, "mallory's device sees none of alice's requests")
            let foreign = try await client.call(.post, "/v1/device/answer", try mallory.approval(of: request, number: "492817"), bearer: mallory.credential)
            #expect(foreign.status == 404, "\(foreign.text)")
            let stillPending = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host)
            #expect(stillPending.string("state") == "pending")
            // Alice's credential with a key that is not the registered one.
            mallory.id = alice.id
            var forged = try mallory.approval(of: request, number: "492817")
            forged["id"] = id
            let refused = try await client.call(.post, "/v1/device/answer", forged, bearer: alice.credential)
            #expect(refused.string("state") == "failed" && refused.string("reason") == "signature does not verify", "\(refused.text)")
        }
    }

    @Test("deny --fraud blocks pushes until an admin unblocks; push_limit caps requests since the last success", arguments: Backend.tested)
    func fraudAndLimit(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.push.limit = 3 }
        try await fixture.withClient { client in
            let device = try await Self.enrollDevice(client, fixture, "alice")
            _ = try await Self.open(client, fixture, "alice")
            let request = try #require(try await Self.pending(client, device).first)
            let fraud = try await client.call(.post, "/v1/device/answer", ["id": request["id"] as? String ?? "", "decision": "fraud"], bearer: device.credential)
            #expect(fraud.string("state") == "denied")
            let blocked = try await Self.open(client, fixture, "alice")
            #expect(blocked.status == 409 && blocked.errorMessage?.contains("fraud") == true, "\(blocked.text)")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflight["push"] == nil)
            let audit = try await client.call(.get, "/v1/audit?user=alice", bearer: fixture.admin)
            #expect((audit["entries"] as? [[String: Any]])?.contains { $0["result"] as? String == "fraud" } == true, "audited")
            let unblocked = try await client.call(.post, "/v1/users/alice/push/unblock", bearer: fixture.admin)
            #expect(unblocked["was_blocked"] as? Bool == true)
            // Limit 3 since the last success (the fraud's request counted before the unblock reset it).
            for _ in 1...3 { #expect(try await Self.open(client, fixture, "alice").status == 201) }
            let limited = try await Self.open(client, fixture, "alice")
            #expect(limited.status == 409 && limited.errorMessage?.contains("push_limit") == true, "\(limited.text)")
        }
    }

    @Test("A device removed by the admin, or by itself, authenticates no more; blocked devices answer nothing until unlocked", arguments: Backend.tested)
    func removeAndUnlock(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let first = try await Self.enrollDevice(client, fixture, "alice")
            let second = try await Self.enrollDevice(client, fixture, "alice")
            let removed = try await client.call(.delete, "/v1/users/alice/devices/\(first.id)", bearer: fixture.admin)
            #expect(removed.status == 204)
            let gone = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: first.credential)
            #expect(gone.status == 401)

            let blocked = try await client.call(.post, "/v1/device/blocked", [:], bearer: second.credential)
            #expect(blocked.string("state") == "blocked")
            let refused = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: second.credential)
            #expect(refused.status == 400, "\(refused.text)")
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "alice"], bearer: fixture.host)
            #expect(preflight["push"] == nil, "no active device")
            let code = try #require(try await client.call(.post, "/v1/users/alice/devices/\(second.id)/unlock-code", bearer: fixture.admin).string("unlock_code"))
            let wrong = try await client.call(.post, "/v1/device/unlock", ["unlock_code": "AAAA-AAAA-AAAA-AAAA"], bearer: second.credential)
            #expect(wrong.status == 400)
            let spent = try await client.call(.post, "/v1/device/unlock", ["unlock_code": code], bearer: second.credential)
            #expect(spent.status == 400, "a wrong code spends the issued one")
            let fresh = try #require(try await client.call(.post, "/v1/users/alice/devices/\(second.id)/unlock-code", bearer: fixture.admin).string("unlock_code"))
            let unlocked = try await client.call(.post, "/v1/device/unlock", ["unlock_code": fresh], bearer: second.credential)
            #expect(unlocked.string("state") == "active", "\(unlocked.text)")

            let deregistered = try await client.call(.post, "/v1/device/remove", [:], bearer: second.credential)
            #expect(deregistered.status == 204)
            let list = try await client.call(.get, "/v1/devices?user=alice", bearer: fixture.admin)
            #expect((list["devices"] as? [Any])?.isEmpty == true, "\(list.text)")
            #expect(try await Self.open(client, fixture, "alice").status == 409)
        }
    }

    @Test("Device certificates made with a CA key verify for their user and device only", arguments: Backend.tested)
    func certificates(_ backend: Backend) async throws {
        let ca = try #require(PushRules.generateKeyPair())
        let device = try TestDevice()
        let message = PushRules.certificateMessage(user: "alice", device: "dv0123456789abcdef", publicKey: device.publicKey)
        let signature = try #require(PushRules.sign(message, privateKeyPEM: ca.privateKeyPEM))
        let certificate = Data(signature).base64EncodedString()
        let caPEM = "-----BEGIN PUBLIC KEY-----\n" + Data(ca.publicKey).base64EncodedString(options: .lineLength64Characters) + "\n-----END PUBLIC KEY-----\n"
        #expect(PushRules.verifyCertificate(certificate, caPublicKeyPEM: caPEM, user: "alice", device: "dv0123456789abcdef", publicKey: device.publicKey))
        #expect(!PushRules.verifyCertificate(certificate, caPublicKeyPEM: caPEM, user: "bob", device: "dv0123456789abcdef", publicKey: device.publicKey))
        #expect(!PushRules.verifyCertificate(certificate, caPublicKeyPEM: caPEM, user: "alice", device: "dv0123456789abcdee", publicKey: device.publicKey))
        #expect(DeviceCertificate.check(certificate: certificate, user: "alice", device: "dv0123456789abcdef", publicKey: device.publicKey,
                                        caPublicKey: ca.publicKey, now: 1_800_000_000) == .valid(expires: nil),
                "the hosts' verifier accepts what securotp device certify makes")
    }

    @Test("Device certificates carry their expiry in what the CA signed; version 1 has none; the host's clock decides")
    func certificateVersions() throws {
        let ca = try #require(PushRules.generateKeyPair())
        let device = try TestDevice()
        let (user, id) = ("alice", "dv0123456789abcdef")
        func check(_ certificate: String, now: Int64 = 1_800_000_000, user: String = "alice") -> DeviceCertificate.Check {
            DeviceCertificate.check(certificate: certificate, user: user, device: id, publicKey: device.publicKey, caPublicKey: ca.publicKey, now: now)
        }
        let expires: Int64 = 1_800_000_100
        let signature = try #require(PushRules.sign(PushRules.certificateMessage(user: user, device: id, publicKey: device.publicKey, expires: expires),
                                                    privateKeyPEM: ca.privateKeyPEM))
        let v2 = DeviceCertificate.text(signature: signature, expires: expires)
        #expect(v2.hasPrefix("v2:1800000100:") && PushRules.isCertificate(v2))
        #expect(check(v2) == .valid(expires: expires))
        #expect(check(v2, now: expires - 1) == .valid(expires: expires))
        #expect(check(v2, now: expires) == .expired(expires), "from its expiry on")
        #expect(check(v2, user: "bob") == .invalid)
        // A validator cannot move the expiry: it is signed.
        #expect(check(v2.replacingOccurrences(of: "v2:1800000100:", with: "v2:1900000100:")) == .invalid)
        // Version 1 (no expiry) still verifies, as a certificate without an expiry.
        let v1Signature = try #require(PushRules.sign(PushRules.certificateMessage(user: user, device: id, publicKey: device.publicKey),
                                                      privateKeyPEM: ca.privateKeyPEM))
        let v1 = Data(v1Signature).base64EncodedString()
        #expect(check(v1, now: 4_000_000_000) == .valid(expires: nil))
        // A version 1 signature presented as version 2, and malformed texts.
        #expect(check("v2:1900000000:" + v1) == .invalid)
        let body = Data(signature).base64EncodedString()
        for text in ["", "v2:", "v2::" + body, "v2:01800000100:" + body, "v2:123456789012:" + body, "v2:18x:" + body, "v3:1800000100:" + body,
                     "v2:1800000100:" + body.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") + "!",
                     String(repeating: "A", count: 200)] {
            #expect(check(text) == .invalid, "\(text)")
        }
    }

    @Test("A host's device_revoked list: device ids, comments and blank lines; anything else names its line")
    func revocationList() throws {
        let list = try DeviceRevocations(parsing: Array("# lost\n\ndv0123456789abcdef   # alice\r\n\tdv00000000000000ff\n".utf8))
        #expect(list.devices == ["dv0123456789abcdef", "dv00000000000000ff"])
        #expect(list.contains("dv0123456789abcdef") && !list.contains("dv0123456789abcdee"))
        for (text, line) in [("dv0123456789abcdef\nalice\n", 2), ("DV0123456789ABCDEF\n", 1), ("dv0123456789abcdef dv00000000000000ff\n", 1),
                             ("\n\ndv0123456789abcde\n", 3)] {
            #expect(throws: DeviceRevocations.BadLine(line: line)) { try DeviceRevocations(parsing: Array(text.utf8)) }
        }
    }

    @Test("The validator's statement is byte for byte the one hosts and devices build (SecurOTPCore/Push)")
    func sameStatement() {
        let ours = PushRules.statement(id: "pr" + String(repeating: "a", count: 32), user: "alice", host: "web1", service: "sudo",
                                       remoteAddress: "", tty: "/dev/pts/1", command: "/usr/bin/id -u", nonce: Self.nonce, number: "004711",
                                       expires: 1_800_000_060, device: "dv0123456789abcdef")
        let core = PushStatement(id: "pr" + String(repeating: "a", count: 32), user: "alice", host: "web1", service: "sudo", remoteAddress: "",
                                 tty: "/dev/pts/1", command: "/usr/bin/id -u", nonce: Self.nonce, number: "004711", expires: "1800000060",
                                 device: "dv0123456789abcdef")
        #expect(ours == core.bytes)
        let key = Array(repeating: UInt8(9), count: 91)
        #expect(PushRules.certificateMessage(user: "alice", device: "dv0123456789abcdef", publicKey: key)
                == DeviceCertificate.statement(user: "alice", device: "dv0123456789abcdef", publicKey: key))
    }
}
