import Foundation
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
}
