import Foundation

/// Token buckets per host (requests per second) and per user (verifications per minute), in
/// this node's memory. They bound what one host or one attack on one user can cost; the
/// lockout after repeated failures (in the store) is what stops guessing.
final class RateLimits: @unchecked Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
        /// When the bucket is full again: from then on it holds no information.
        var full: Double
    }

    /// Buckets kept before the first pruning.
    static let pruneFloor = 100_000

    /// Per second; 0 turns the limit off.
    let hostRate: Double
    /// Per minute; 0 turns the limit off.
    let userRate: Double
    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]
    /// Pruning visits every bucket, so it waits until the table has doubled since the last
    /// one: a flood of distinct user names costs O(1) per request, not a scan each.
    private var pruneAt = RateLimits.pruneFloor
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

    /// Buckets held (for tests).
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return buckets.count
    }

    private func take(_ key: String, rate: Double, burst: Double) -> Bool {
        let now = clock()
        lock.lock()
        defer { lock.unlock() }
        var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now, full: now)
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
        bucket.updated = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        bucket.full = now + (burst - bucket.tokens) / rate
        buckets[key] = bucket
        if buckets.count > pruneAt {
            buckets = buckets.filter { $0.value.full > now }
            pruneAt = max(Self.pruneFloor, 2 * buckets.count)
        }
        return allowed
    }
}
