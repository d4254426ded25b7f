import SecurOTPService

/// One look at a long-poll's state: final, or the ticket to wait on (taken before the look,
/// PushWaiters) and for how long.
public enum PollStep<Value: Sendable>: Sendable {
    case done(Value)
    case wait(ticket: Int, seconds: Double)
}

/// Long-polls without a polling interval (docs/push.md): a waiting request holds a ticket under
/// a key — `push:<id>` for a host waiting on its request, `user:<name>` for a user's devices
/// waiting for new requests — and a state change on that key resumes it at once. A ticket is
/// taken before the state is read, so a change between the read and the wait is never missed.
/// Bounded: past `capacity` tickets, new waits are refused rather than queued.
public actor PushWaiters {
    public let capacity: Int
    private var keys: [String: Set<Int>] = [:]
    private var keyOfTicket: [Int: String] = [:]
    private var notified: Set<Int> = []
    private var continuations: [Int: CheckedContinuation<Void, Never>] = [:]
    private var wakers: [Int: @Sendable () -> Void] = [:]
    private var nextTicket = 0

    public init(capacity: Int = 10_000) { self.capacity = capacity }

    public var count: Int { keyOfTicket.count }

    static func request(_ id: String) -> String { PushChangeKeys.request(id) }
    static func user(_ name: String) -> String { PushChangeKeys.user(name) }

    /// A ticket under `key`, or nil when `capacity` waits are in progress.
    public func register(_ key: String) -> Int? {
        guard keyOfTicket.count < capacity else { return nil }
        nextTicket &+= 1
        keyOfTicket[nextTicket] = key
        keys[key, default: []].insert(nextTicket)
        return nextTicket
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
