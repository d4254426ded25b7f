import SecurOTPService

/// One look at a long-poll's state: final, or the ticket to wait on (taken before the look,
/// PushWaiters) and for how long.
public enum PollStep<Value: Sendable>: Sendable {
    case done(Value)
    case wait(ticket: Int, seconds: Double)
}

/// Who holds a long-poll's ticket, for the bounds on parked polls (docs/push.md, "Limits are
/// rates"): a host waiting on its request, or a device (its id, its user, its client address's
/// bucket key, AddressRateLimit.key) waiting for its user's requests.
public enum WaitOwner: Sendable, Equatable {
    case host
    case device(id: String, user: String, address: String)
}

/// Long-polls without a polling interval (docs/push.md): a waiting request holds a ticket under
/// a key — `push:<id>` for a host waiting on its request, `user:<name>` for a user's devices
/// waiting for new requests — and a state change on that key resumes it at once. A ticket is
/// taken before the state is read, so a change between the read and the wait is never missed.
///
/// Bounded, and bounded per owner (issue 25): past `capacity` tickets, new waits are refused
/// rather than queued; devices together hold at most `deviceShare` (half), so the other half
/// is kept for hosts whatever devices do; one device holds at most `perDevice`, one user's
/// devices `perUser`, one client address's devices `perAddress`. A refusal for the owner's own
/// bound is `.ownerFull` (429: that client should slow down), for the shared ones `.full` (503).
public actor PushWaiters {
    public enum Refusal: Error, Sendable, Equatable {
        /// Every slot this kind of waiter may use is taken.
        case full
        /// The device, its user or its address holds its share already.
        case ownerFull(String)
    }

    public let capacity: Int
    /// Device waits held at most: half the capacity (at least one).
    public nonisolated let deviceShare: Int
    public static let perDevice = 4
    public static let perUser = 16
    /// One address's device waits: a quarter of the device share (phones behind one NAT or
    /// proxy share it), at least `perUser`.
    public nonisolated let perAddress: Int
    private var keys: [String: Set<Int>] = [:]
    private var keyOfTicket: [Int: String] = [:]
    private var ownerOfTicket: [Int: WaitOwner] = [:]
    private var held: [String: Int] = [:]
    private var deviceWaits = 0
    private var notified: Set<Int> = []
    private var continuations: [Int: CheckedContinuation<Void, Never>] = [:]
    private var wakers: [Int: @Sendable () -> Void] = [:]
    private var nextTicket = 0
    private var heldWatchers: [Int: (count: Int, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var nextWatcher = 0

    public init(capacity: Int = 10_000) {
        self.capacity = capacity
        deviceShare = max(1, capacity / 2)
        perAddress = max(Self.perUser, deviceShare / 4)
    }

    public var count: Int { keyOfTicket.count }

    /// Whether at least `count` waits hold a ticket within `seconds`. A wait takes its ticket
    /// before it reads the state, so from then on no change is missed: a test that awaits this
    /// before making the change knows the long-poll is parked, without sleeping for it; false
    /// (the waits never came) fails the test instead of hanging it.
    public func held(atLeast count: Int, within seconds: Double = 30) async -> Bool {
        guard keyOfTicket.count < count else { return true }
        nextWatcher &+= 1
        let watcher = nextWatcher
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            heldWatchers[watcher] = (count, continuation)
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(seconds))
                await self?.giveUp(watcher)
            }
        }
    }

    private func giveUp(_ watcher: Int) {
        heldWatchers.removeValue(forKey: watcher)?.continuation.resume(returning: false)
    }

    static func request(_ id: String) -> String { PushChangeKeys.request(id) }
    static func user(_ name: String) -> String { PushChangeKeys.user(name) }

    /// A ticket under `key`, or nil when `capacity` waits are in progress (a host's wait).
    public func register(_ key: String) -> Int? {
        guard case .success(let ticket) = register(key, owner: .host) else { return nil }
        return ticket
    }

    /// A ticket under `key` for `owner`, or why not.
    public func register(_ key: String, owner: WaitOwner) -> Result<Int, Refusal> {
        guard keyOfTicket.count < capacity else { return .failure(.full) }
        if case .device(let id, let user, let address) = owner {
            guard deviceWaits < deviceShare else { return .failure(.full) }
            if held["d\u{0}" + id, default: 0] >= Self.perDevice { return .failure(.ownerFull("this device holds \(Self.perDevice) waiting requests")) }
            if held["u\u{0}" + user, default: 0] >= Self.perUser {
                return .failure(.ownerFull("this user's devices hold \(Self.perUser) waiting requests"))
            }
            if held["a\u{0}" + address, default: 0] >= perAddress {
                return .failure(.ownerFull("devices at this address hold \(perAddress) waiting requests"))
            }
            deviceWaits += 1
            for counter in Self.counters(owner) { held[counter, default: 0] += 1 }
        }
        nextTicket &+= 1
        keyOfTicket[nextTicket] = key
        ownerOfTicket[nextTicket] = owner
        keys[key, default: []].insert(nextTicket)
        let held = keyOfTicket.count
        for (watcher, waiting) in heldWatchers where waiting.count <= held {
            heldWatchers.removeValue(forKey: watcher)
            waiting.continuation.resume(returning: true)
        }
        return .success(nextTicket)
    }

    private static func counters(_ owner: WaitOwner) -> [String] {
        guard case .device(let id, let user, let address) = owner else { return [] }
        return ["d\u{0}" + id, "u\u{0}" + user, "a\u{0}" + address]
    }

    /// Returns when `key` is notified (or was, since the ticket was taken), or after `seconds`.
    public func wait(_ ticket: Int, seconds: Double) async {
        defer { finish(ticket) }
        guard keyOfTicket[ticket] != nil, !notified.contains(ticket), seconds > 0 else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            continuations[ticket] = continuation
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(seconds))
                await self?.resume(ticket)
            }
        }
    }

    /// Calls `wake` once when `key` is notified — at once if it was since the ticket was taken,
    /// or the ticket is gone — and never after `finish`. The caller owns the timeout (ParkedPoll).
    public func whenNotified(_ ticket: Int, _ wake: @escaping @Sendable () -> Void) {
        guard keyOfTicket[ticket] != nil, !notified.contains(ticket) else { return wake() }
        wakers[ticket] = wake
    }

    /// Resumes every wait under `key`.
    public func notify(_ key: String) {
        for ticket in keys[key] ?? [] {
            if continuations[ticket] != nil {
                resume(ticket)
            } else if let wake = wakers.removeValue(forKey: ticket) {
                wake()
            } else {
                notified.insert(ticket)
            }
        }
    }

    /// Drops a ticket that will not wait (the state was final already).
    public func finish(_ ticket: Int) {
        if let continuation = continuations.removeValue(forKey: ticket) { continuation.resume() }
        wakers[ticket] = nil
        notified.remove(ticket)
        guard let key = keyOfTicket.removeValue(forKey: ticket) else { return }
        if let owner = ownerOfTicket.removeValue(forKey: ticket), case .device = owner {
            deviceWaits -= 1
            for counter in Self.counters(owner) {
                let left = held[counter, default: 1] - 1
                held[counter] = left > 0 ? left : nil
            }
        }
        keys[key]?.remove(ticket)
        if keys[key]?.isEmpty == true { keys[key] = nil }
    }

    /// Looks (`step`) until the look is final, waiting on each look's ticket in between.
    public nonisolated func poll<Value: Sendable>(_ step: () async throws -> PollStep<Value>) async throws -> Value {
        while true {
            switch try await step() {
            case .done(let value): return value
            case .wait(let ticket, let seconds): await wait(ticket, seconds: seconds)
            }
        }
    }

    private func resume(_ ticket: Int) {
        continuations.removeValue(forKey: ticket)?.resume()
    }
}
