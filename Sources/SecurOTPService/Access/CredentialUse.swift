import Foundation

/// When each credential was last recorded as used. Credential rows are touched (last_used) at
/// most once a minute each: a write per request would cost a transaction's worth of work on
/// every verification.
public final class CredentialUse: @unchecked Sendable {
    private let lock = NSLock()
    private var touched: [String: Int64] = [:]

    public init() {}

    /// Whether the credential `id` is due for a last_used update at `now` (and notes that it got one).
    public func due(_ id: String, now: Int64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if let last = touched[id], now - last < 60 { return false }
        touched[id] = now
        return true
    }
}
