import Foundation

/// A store that several validators share tells each of them about push state changes made by
/// any of them (PostgreSQL: LISTEN/NOTIFY), so that long-polls on one node end at once when a
/// device answers on another (docs/push.md). The server hands each key to its PushWaiters.
public protocol PushChangeFeed: Sendable {
    /// Calls `handler` with the waiter key of each change (PushChangeKeys) until the service
    /// closes; a later call replaces the handler. Delivery is best effort: a wait whose change was
    /// lost still ends at its bound and reads the state again.
    func followPushChanges(_ handler: @escaping @Sendable (String) async -> Void)
}

/// The keys waits are held under: a host waiting on its request, a user's devices waiting for new ones.
public enum PushChangeKeys {
    public static func request(_ id: String) -> String { "push:\(id)" }
    public static func user(_ name: String) -> String { "user:\(name)" }
}

/// The feed of a store one process keeps (SQLite): changes the routes cannot name themselves —
/// a cancel, whose body names only the request, ends its user's device waits too — are handed
/// to the follower in-process.
public final class PushChangeRelay: @unchecked Sendable {
    private let lock = NSLock()
    private var handler: (@Sendable (String) async -> Void)?

    public init() {}

    public func follow(_ handler: @escaping @Sendable (String) async -> Void) { lock.withLock { self.handler = handler } }

    /// Hands `keys` to the follower, if any, without waiting for it.
    public func publish(_ keys: [String]) {
        guard let handler = lock.withLock({ self.handler }) else { return }
        Task { for key in keys { await handler(key) } }
    }
}
