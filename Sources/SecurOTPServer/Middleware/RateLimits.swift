import Foundation

/// Token buckets per host (requests per second) and per user (verifications per minute), in
/// this node's memory. They bound what one host or one attack on one user can cost; the
/// lockout after repeated failures (in the store) is what stops guessing.
final class RateLimits: @unchecked Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    /// Per second; 0 turns the limit off.
    let hostRate: Double
    /// Per minute; 0 turns the limit off.
    let userRate: Double
    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]
    private let clock: @Sendable () -> Double

    init(hostPerSecond: Int, userPerMinute: Int, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        hostRate = Double(hostPerSecond)
        userRate = Double(userPerMinute) / 60
        self.clock = clock
    }

    /// Bursts of twice the rate per second are allowed.
    func allowHost(_ host: String) -> Bool {
        hostRate <= 0 || take("h\u{0}" + host, rate: hostRate, burst: max(1, 2 * hostRate))
    }

    /// Bursts of the whole per-minute allowance are allowed.
    func allowUser(_ user: String) -> Bool {
        userRate <= 0 || take("u\u{0}" + user, rate: userRate, burst: max(1, userRate * 60))
    }

    private func take(_ key: String, rate: Double, burst: Double) -> Bool {
        let now = clock()
        lock.lock()
        defer { lock.unlock() }
        var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
        bucket.updated = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[key] = bucket
        if buckets.count > 100_000 { prune(now: now) }
        return allowed
    }

    /// Buckets idle long enough to be full again hold no information.
    private func prune(now: Double) {
        buckets = buckets.filter { now - $0.value.updated < 600 }
    }
}
