import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
@testable import SecurOTPServer
import SecurOTPService
import Testing

/// Issue 25, items 5–7 and the sudo-command finding (docs/security.md, "Limits are rates"):
/// push limits decay and any successful login clears them; one device cannot take the
/// long-poll slots, and device routes have a rate; activation is held per address and its
/// misses are audited in aggregate; a request's context lives only while it is pending.
@Suite("Validator API: limits are rates")
struct PushLimitsAPITests {
    static func auditEntries(_ client: APIClient, _ fixture: ValidatorFixture, user: String? = nil) async throws -> [[String: Any]] {
        let answer = try await client.call(.get, "/v1/audit" + (user.map { "?user=\($0)" } ?? "?limit=10000"), bearer: fixture.admin)
        return answer["entries"] as? [[String: Any]] ?? []
    }

    @Test("push_limit decays with time and any successful login clears it; a device-only user is never locked out", arguments: Backend.tested)
    func pushLimitIsARate(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.push.limit = 2; $0.push.limitInterval = 60 }
        try await fixture.withClient { client in
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            for _ in 1...2 { #expect(try await PushAPITests.open(client, fixture, "alice").status == 201) }
            let limited = try await PushAPITests.open(client, fixture, "alice")
            #expect(limited.status == 409 && limited.errorMessage?.contains("push_limit") == true, "\(limited.text)")
            // A minute passes (the stored time moves back instead of the test sleeping): one request decayed.
            _ = try PushAPITests.sql(fixture, #"UPDATE push_users SET counted_until = counted_until - 60 WHERE "user" = 'alice'"#)
            #expect(try await PushAPITests.open(client, fixture, "alice").status == 201, "a rate, not a latch")
            #expect(try await PushAPITests.open(client, fixture, "alice").status == 409)

            // A passcode login clears the count as a push success does.
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "alice")
            let accepted = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.totp(secret)], bearer: fixture.host)
            #expect(accepted.string("result") == "accept", "\(accepted.text)")
            for _ in 1...2 { #expect(try await PushAPITests.open(client, fixture, "alice").status == 201, "cleared by the passcode login") }
            #expect(try await PushAPITests.open(client, fixture, "alice").status == 409)
        }
    }

    @Test("A push request's context (remote address, tty, sudo's command) is gone once the request ends, and the sweep ends expired ones", arguments: Backend.tested)
    func contextLivesWhileTheRequestDoes(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            func open() async throws -> String {
                let opened = try await client.call(.post, "/v1/push", ["user": "alice", "nonce": PushAPITests.nonce, "number": "492817", "service": "sudo",
                                                                       "remote_address": "web1", "tty": "/dev/pts/3", "command": "sudo mysql -pSECRET"],
                                                   bearer: fixture.host)
                return try #require(opened.string("id"))
            }
            func stored(_ id: String) throws -> String {
                try PushAPITests.sql(fixture, "SELECT remote_address || '|' || tty || '|' || command || '|' || state FROM push_requests WHERE id = '\(id)'")
            }
            let cancelled = try await open()
            #expect(try stored(cancelled) == "web1|/dev/pts/3|sudo mysql -pSECRET|pending", "the device is shown it while pending")
            _ = try await client.call(.post, "/v1/push/cancel", ["id": cancelled], bearer: fixture.host)
            #expect(try stored(cancelled) == "|||cancelled")

            // Replaced by the same host's next request: cancelled, context gone.
            let replaced = try await open()
            let expiring = try await open()
            #expect(try stored(replaced) == "|||cancelled")
            // Expired without anyone asking: the sweep ends it.
            fixture.clock.advance(fixture.configuration.push.requestLifetime + 10)
            let expired = fixture.clock.now() - 10
            let upkeep = try #require(fixture.service as? any PushUpkeep)
            #expect(try await upkeep.sweepPushRequests(now: fixture.clock.now()) == 1)
            #expect(try stored(expiring) == "|||expired")
            let wait = try await client.call(.post, "/v1/push/wait", ["id": expiring, "wait": 1], bearer: fixture.host)
            #expect(wait.string("state") == "expired", "\(wait.text)")
            // A day past its expiry the row goes.
            _ = try await upkeep.sweepPushRequests(now: expired + PushUpkeepRules.keptSeconds + 1)
            #expect(try stored(expiring) == "")
        }
    }

    @Test("One device's flood of long-polls takes at most its share; another user's login is approved meanwhile", arguments: Backend.tested)
    func deviceFloodLeavesOthersTheirSlots(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.maxPushWaiters = 40; $0.deviceRequestsPerMinute = 0 }
        try await fixture.withClient { client in
            let mallory = try await PushAPITests.enrollDevice(client, fixture, "mallory")
            let alice = try await PushAPITests.enrollDevice(client, fixture, "alice")
            // Mallory's device opens 10 waits at once; only PushWaiters.perDevice of them park.
            let flood = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<10 {
                        group.addTask { try await client.call(.post, "/v1/device/requests", ["wait": 30], bearer: mallory.credential).status }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
            }
            #expect(await fixture.waiters.held(atLeast: PushWaiters.perDevice), "the long-poll never parked")
            // Alice's login meanwhile: her device sees the request, approves; the host's wait gets it.
            let id = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
            let request = try #require(try await PushAPITests.pending(client, alice).first)
            let answered = try await client.call(.post, "/v1/device/answer", try alice.approval(of: request, number: "492817"), bearer: alice.credential)
            #expect(answered.string("state") == "approved", "\(answered.text)")
            let waited = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 5], bearer: fixture.host)
            #expect(waited.string("state") == "consumed" && waited["approval"] != nil, "\(waited.text)")
            // A request for mallory ends her parked waits.
            #expect(try await PushAPITests.open(client, fixture, "mallory").status == 201)
            let statuses = try await flood.value
            #expect(statuses.filter { $0 == 429 }.count == 10 - PushWaiters.perDevice, "\(statuses)")
            #expect(statuses.filter { $0 == 200 }.count == PushWaiters.perDevice, "\(statuses)")
        }
    }

    @Test("PushWaiters: devices hold at most half, so hosts keep theirs; bounds per device, user and address, freed as waits end")
    func waitersKeepAShareForHosts() async {
        let waiters = PushWaiters(capacity: 40)
        #expect(waiters.deviceShare == 20 && waiters.perAddress == 16)
        func device(_ id: Int, user: Int, address: Int = 0) -> WaitOwner { .device(id: "dv\(id)", user: "u\(user)", address: "192.0.2.\(address)") }
        var tickets: [Int] = []
        // One device: 4, then its own bound.
        for _ in 0..<4 { if case .success(let ticket) = await waiters.register("user:u0", owner: device(0, user: 0)) { tickets.append(ticket) } }
        #expect(tickets.count == 4)
        guard case .failure(.ownerFull) = await waiters.register("user:u0", owner: device(0, user: 0)) else { Issue.record("a fifth wait of one device"); return }
        // One user's devices: 16 in all.
        for id in 1...3 { for _ in 0..<4 { _ = await waiters.register("user:u0", owner: device(id, user: 0)) } }
        guard case .failure(.ownerFull) = await waiters.register("user:u0", owner: device(4, user: 0)) else { Issue.record("a user's 17th"); return }
        // Another address, other users: the devices' half fills at 20.
        for id in 10..<14 { _ = await waiters.register("user:u\(id)", owner: device(id, user: id, address: 1)) }
        #expect(await waiters.count == 20)
        guard case .failure(.full) = await waiters.register("user:u99", owner: device(99, user: 99, address: 2)) else { Issue.record("past the devices' half"); return }
        // Hosts still get the other half.
        for index in 0..<20 { #expect(await waiters.register("push:pr\(index)") != nil, "host wait \(index)") }
        #expect(await waiters.register("push:one-too-many") == nil)
        // A device's wait that ends frees its place at once.
        await waiters.finish(tickets[0])
        guard case .success = await waiters.register("user:u0", owner: device(0, user: 0)) else { Issue.record("freed"); return }
    }

    @Test("Device routes are rate-limited per device, as host routes are per host", arguments: Backend.tested)
    func deviceRoutesHaveARate(_ backend: Backend) async throws {
        // One a minute: the test's own slowness on loaded cores cannot refill the bucket.
        let fixture = try await ValidatorFixture.make(backend) { $0.deviceRequestsPerMinute = 1 }
        try await fixture.withClient { client in
            let device = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let other = try await PushAPITests.enrollDevice(client, fixture, "bob")
            #expect(try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: device.credential).status == 200)
            let limited = try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: device.credential)
            #expect(limited.status == 429 && limited.errorCode == "rate_limited", "\(limited.text)")
            #expect(try await client.call(.post, "/v1/device/requests", ["wait": 1], bearer: other.credential).status == 200, "per device")
        }
    }

    @Test("Activation is held per address, and refused codes are audited in aggregate, not one row each", arguments: Backend.tested)
    func activationFlood(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.webRequestsPerMinute = 5 }
        let misses = AnonymousMisses()
        // Time stands still: 8 requests on loaded cores may take longer than the 12 s a 5-a-minute bucket refills one in.
        let now = Date().timeIntervalSince1970
        let router = buildRouter(configuration: fixture.configuration, service: fixture.service, metrics: ValidatorMetrics(), misses: misses,
                                 clock: { now })
        do {
            try await Application(router: router).test(.router) { testClient in
                let client = APIClient(client: testClient)
                let key = PushRules.base64URLEncode(try TestDevice().publicKey)
                let before = try await Self.auditEntries(client, fixture).count
                var statuses: [Int] = []
                for _ in 0..<8 {
                    statuses.append(try await client.call(.post, "/v1/devices/activate", ["activation_code": "AAAA-AAAA-AAAA-AAAA", "public_key": key]).status)
                }
                #expect(statuses == [401, 401, 401, 401, 401, 429, 429, 429], "\(statuses)")
                #expect(try await Self.auditEntries(client, fixture).count == before, "no row per refused code")
                await misses.flush(into: fixture.service, now: Int64(Date().timeIntervalSince1970))
                let entries = try await Self.auditEntries(client, fixture).filter { $0["action"] as? String == "device activate" }
                #expect(entries.count == 1, "\(entries)")
                #expect((entries.first?["detail"] as? String)?.hasPrefix("5 refused activation codes") == true, "\(entries)")
            }
        } catch {
            await fixture.cleanUp()
            throw error
        }
        await fixture.cleanUp()
    }
}
