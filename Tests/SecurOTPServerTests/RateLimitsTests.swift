import Foundation
import NIOCore
@testable import SecurOTPServer
import Testing

/// The in-memory token buckets, on a clock the test moves.
@Suite("Rate limits: buckets per host and per user")
struct RateLimitsTests {
    final class Clock: @unchecked Sendable {
        var now = 1_000_000.0
    }

    @Test("A user gets the per-minute allowance as a burst, then one more per refill interval")
    func userBurstAndRefill() {
        let clock = Clock()
        let limits = RateLimits(hostPerSecond: 0, userPerMinute: 6, clock: { clock.now })
        #expect((1...6).allSatisfy { _ in limits.allowUser("alice") })
        #expect(!limits.allowUser("alice"))
        #expect(limits.allowUser("bob"), "the limit is per user")
        clock.now += 10 // 6 per minute: one token every 10 s
        #expect(limits.allowUser("alice"))
        #expect(!limits.allowUser("alice"))
        #expect(limits.allowHost("any"), "0 turns the host limit off")
    }

    @Test("Past the floor, full buckets are dropped and limited users stay limited; the next pruning waits for the table to double")
    func pruning() {
        let clock = Clock()
        let limits = RateLimits(hostPerSecond: 0, userPerMinute: 30, clock: { clock.now })
        // A user at the limit: their bucket refills in 60 s.
        #expect((1...30).allSatisfy { _ in limits.allowUser("mallory") })
        #expect(!limits.allowUser("mallory"))
        // Distinct names, one request each: each bucket is full again 2 s later.
        for index in 0..<(RateLimits.pruneFloor - 1) { _ = limits.allowUser("user\(index)") }
        #expect(limits.count == RateLimits.pruneFloor, "nothing pruned at the floor")
        clock.now += 3
        #expect(limits.allowUser("one-more"))
        #expect(limits.count == 2, "only mallory's and one-more's buckets carry information")
        // 3 s refilled 1.5 tokens; a pruned bucket would have come back with all 30.
        #expect(limits.allowUser("mallory"))
        #expect(!limits.allowUser("mallory"), "pruning must not lift a limit")

        // Names that keep their buckets (not yet full): the table grows past the floor
        // without a pruning on every request — the next one comes at twice the survivors.
        for index in 0..<(RateLimits.pruneFloor + 10) { _ = limits.allowUser("fresh\(index)") }
        #expect(limits.count == RateLimits.pruneFloor + 12, "pruned once at the floor, kept what was not full")
    }

    @Test("An address gets its per-minute allowance as a burst; the first refusal of a run is told apart (it is logged once)")
    func addressBurst() {
        let clock = Clock()
        let limits = RateLimits(hostPerSecond: 0, userPerMinute: 0, addressPerMinute: 3, clock: { clock.now })
        #expect((1...3).allSatisfy { _ in limits.allowAddress("192.0.2.1") == .allowed })
        #expect(limits.allowAddress("192.0.2.1") == .refusedFirst)
        #expect(limits.allowAddress("192.0.2.1") == .refused)
        #expect(limits.allowAddress("192.0.2.2") == .allowed, "the limit is per address")
        clock.now += 20 // 3 per minute: one token every 20 s
        #expect(limits.allowAddress("192.0.2.1") == .allowed)
        #expect(limits.allowAddress("192.0.2.1") == .refusedFirst, "a new run of refusals is logged again")
        #expect(RateLimits(hostPerSecond: 0, userPerMinute: 0, addressPerMinute: 0).allowAddress("x") == .allowed, "0 turns it off")
    }

    @Test("Many addresses cannot grow the table past its capacity: full buckets go first, then the oldest; a recent limited address stays limited")
    func addressCapacity() {
        let clock = Clock()
        let limits = RateLimits(hostPerSecond: 0, userPerMinute: 0, addressPerMinute: 2, addressCapacity: 100, clock: { clock.now })
        for index in 0..<1000 {
            _ = limits.allowAddress("10.0.\(index / 256).\(index % 256)")
            #expect(limits.addressCount <= 100)
            if index == 950 { _ = (limits.allowAddress("192.0.2.9"), limits.allowAddress("192.0.2.9")) }
        }
        #expect(limits.allowAddress("192.0.2.9") != .allowed, "made after the last eviction: still limited")
        // Buckets full again are dropped before any limited one.
        clock.now += 120
        #expect(limits.allowAddress("192.0.2.9") == .allowed)
        #expect(limits.addressCount <= 100)
        #expect(limits.count == 0, "addresses never share the hosts' and users' table")
    }

    @Test("Address keys: IPv4 itself, IPv6 by its /64, IPv4-mapped IPv6 as IPv4, a Unix socket as one")
    func addressKeys() throws {
        #expect(AddressRateLimit.key(try SocketAddress(ipAddress: "192.0.2.7", port: 1)) == "192.0.2.7")
        let a = AddressRateLimit.key(try SocketAddress(ipAddress: "2001:db8:1:2:aaaa::1", port: 1))
        let b = AddressRateLimit.key(try SocketAddress(ipAddress: "2001:db8:1:2:ffff:1:2:3", port: 1))
        #expect(a == "2001:db8:1:2::/64" && a == b)
        #expect(AddressRateLimit.key(try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 1)) != a)
        #expect(AddressRateLimit.key(try SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 1)) == "192.0.2.7")
        #expect(AddressRateLimit.key(try SocketAddress(unixDomainSocketPath: "/tmp/x")) == "unix")
        #expect(AddressRateLimit.key(nil) == "unknown")
    }
}
