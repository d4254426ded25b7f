import Foundation
import SecurOTPService
import Testing

/// A device's long-poll with `known` holds while the pending set is what it shows, and ends at
/// once when that set changes — also when the host cancels or supersedes a request, which
/// changes nothing the device did (docs/push.md, `POST /v1/device/requests`).
@Suite("Validator API: cancelling a push request wakes the user's devices")
struct PushCancelWakeTests {
    @Test("POST /v1/push/cancel ends a device's wait on the request at once", arguments: Backend.tested)
    func cancelWakesDevice(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let id = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))

            // The set is what the device shows: the wait holds (here 1 s, its bound).
            let held = Date()
            let unchanged = try await client.call(.post, "/v1/device/requests", ["wait": 1, "known": [id]], bearer: device.credential)
            #expect((unchanged["requests"] as? [[String: Any]])?.count == 1, "\(unchanged.text)")
            #expect(Date().timeIntervalSince(held) >= 0.9, "a known set holds the wait")

            // A different set answers at once.
            let differs = Date()
            _ = try await client.call(.post, "/v1/device/requests", ["wait": 20, "known": []], bearer: device.credential)
            #expect(Date().timeIntervalSince(differs) < 5)

            let started = Date()
            async let waited = client.call(.post, "/v1/device/requests", ["wait": 20, "known": [id]], bearer: device.credential)
            #expect(await fixture.waiters.held(atLeast: 1), "the long-poll never parked")
            let cancel = try await client.call(.post, "/v1/push/cancel", ["id": id], bearer: fixture.host)
            #expect(cancel.string("state") == "cancelled")
            let cancelled = Date()
            let list = try await waited
            #expect((list["requests"] as? [Any])?.isEmpty == true, "\(list.text)")
            // A missed wake-up takes the whole 20 s; a loaded machine slows the calls.
            #expect(Date().timeIntervalSince(cancelled) < 10, "woke \(Date().timeIntervalSince(started)) s after the wait began, bound 20 s")
        }
    }

    @Test("A newer request from the same host superseding the old one ends a device's wait at once", arguments: Backend.tested)
    func supersedeWakesDevice(_ backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let device = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let first = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
            async let waited = client.call(.post, "/v1/device/requests", ["wait": 20, "known": [first]], bearer: device.credential)
            #expect(await fixture.waiters.held(atLeast: 1), "the long-poll never parked")
            let second = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
            let opened = Date()
            let list = try await waited
            #expect((list["requests"] as? [[String: Any]])?.map { $0["id"] as? String } == [second], "\(list.text)")
            #expect(Date().timeIntervalSince(opened) < 10)
        }
    }

    @Test("known is bounded")
    func knownBounded() async throws {
        let fixture = try await ValidatorFixture.make(.sqlite)
        try await fixture.withClient { client in
            let device = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let tooMany = try await client.call(.post, "/v1/device/requests", ["wait": 1, "known": (0..<65).map { "p_\($0)" }], bearer: device.credential)
            #expect(tooMany.status == 400, "\(tooMany.text)")
        }
    }
}
