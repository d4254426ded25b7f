import Foundation

/// Token buckets per host (requests per second), per user (verifications per minute), per
/// device (requests per minute) and per client address (requests per minute on the routes
/// without a credential: `/v1/web/*`, `/v1/devices/activate`), in this node's memory.
/// They bound what one host, one attack on one user or one address can cost; the lockout
/// after repeated failures (in the store) is what stops guessing.
final class RateLimits: @unchecked Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
        /// When the bucket is full again: from then on it holds no information.
        var full: Double
        /// The last request was refused (the refusal is logged once per run of refusals).
        var refusing = false
    }

    /// What `allowAddress` decided; `.refusedFirst` is the first refusal after an allowed request.
    enum AddressDecision: Equatable {
        case allowed, refusedFirst, refused
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

    /// Per minute; 0 turns the limit off.
    let addressRate: Double
    /// Address buckets held at most: an attacker with many addresses cannot grow the table
    /// past it. Unauthenticated callers' buckets live apart from hosts' and users', so a flood
    /// of addresses never evicts those.
    let addressCapacity: Int
    private var addressBuckets: [String: Bucket] = [:]
    /// Address keys in the order their buckets were made, oldest first.
    private var addressOrder: [String] = []

    /// Per second (`rate_limit_device` is per minute); 0 turns the limit off.
    let deviceRate: Double

    init(hostPerSecond: Int, userPerMinute: Int, addressPerMinute: Int = 0, devicePerMinute: Int = 0, addressCapacity: Int = 50_000,
         clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        hostRate = Double(hostPerSecond)
        deviceRate = Double(devicePerMinute) / 60
        userRate = Double(userPerMinute) / 60
        addressRate = Double(addressPerMinute) / 60
        self.addressCapacity = max(4, addressCapacity)
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

    /// A device's requests (`rate_limit_device` per minute): bursts of the whole per-minute
    /// allowance are allowed.
    func allowDevice(_ device: String) -> Bool {
        deviceRate <= 0 || take("d\u{0}" + device, rate: deviceRate, burst: max(1, deviceRate * 60))
    }

    /// Bursts of the whole per-minute allowance are allowed. `address` is a bucket key
    /// (`addressKey`): an IPv4 address, an IPv6 /64, "unix".
    func allowAddress(_ address: String) -> AddressDecision {
        guard addressRate > 0 else { return .allowed }
        let now = clock()
        let burst = max(1, addressRate * 60)
        lock.lock()
        defer { lock.unlock() }
        let existing = addressBuckets[address]
        if existing == nil { makeRoomForAddress(now: now) }
        var bucket = existing ?? Bucket(tokens: burst, updated: now, full: now)
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * addressRate)
        bucket.updated = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        bucket.full = now + (burst - bucket.tokens) / addressRate
        let wasRefusing = bucket.refusing
        bucket.refusing = !allowed
        addressBuckets[address] = bucket
        if existing == nil { addressOrder.append(address) }
        return allowed ? .allowed : wasRefusing ? .refused : .refusedFirst
    }

    /// At capacity, drops the buckets that are full again (they carry nothing); if that frees
    /// less than a quarter, the oldest buckets go until a quarter is free. Each pass frees a
    /// quarter of the table, so its cost is O(1) per new address.
    private func makeRoomForAddress(now: Double) {
        guard addressBuckets.count >= addressCapacity else { return }
        addressBuckets = addressBuckets.filter { $0.value.full > now }
        addressOrder = addressOrder.filter { addressBuckets[$0] != nil }
        let keep = addressCapacity - addressCapacity / 4
        var evicted = 0
        while addressBuckets.count > keep, evicted < addressOrder.count {
            addressBuckets[addressOrder[evicted]] = nil
            evicted += 1
        }
        addressOrder.removeFirst(evicted)
    }

    /// Buckets held (for tests).
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return buckets.count
    }

    /// Address buckets held (for tests).
    var addressCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return addressBuckets.count
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
