/// `push_limit` as a rate, not a latch (docs/push.md, "Limits are rates"): a user may have
/// `push_limit` push requests counted at once; each request counts for `push_limit_interval`
/// seconds after the one before it, so the count decays with time, and any successful login
/// clears it. A user whose only factor is push is therefore never locked out by it: past the
/// burst, one more request is possible every `push_limit_interval` seconds (30 s to an hour,
/// the waits NIST SP 800-63B-4 §3.2.2 names).
///
/// The state is one time per user, `counted_until` (push_users): when every counted request
/// will have decayed (the generic cell rate algorithm's theoretical arrival time). Written once
/// for both stores, which read the time, ask `admit` and write what it returns.
public struct PushRate: Sendable, Equatable {
    public enum Admission: Sendable, Equatable {
        /// Open the request and store `countedUntil`.
        case allowed(countedUntil: Int64)
        /// Refused; one more request is possible after `retryAfter` seconds.
        case refused(retryAfter: Int64)
    }

    /// `push_limit`; 0 counts nothing.
    public var limit: Int
    /// `push_limit_interval`, seconds.
    public var interval: Int64

    public init(limit: Int, interval: Int64) {
        self.limit = limit
        self.interval = min(max(1, interval), 31_536_000)
    }

    public init(_ policy: PushPolicy) { self.init(limit: policy.limit, interval: policy.limitInterval) }

    /// Whether one more request may be opened at `now`, given the stored `countedUntil` (0: none
    /// counted). A refused request is not counted, so refusals never lengthen the wait.
    public func admit(countedUntil: Int64, now: Int64) -> Admission {
        guard limit > 0 else { return .allowed(countedUntil: countedUntil) }
        let start = max(countedUntil, now)
        // Requests still counted after this one would be: at most limit - 1 intervals ahead of now.
        let tolerance = Int64(min(limit, 1_000) - 1) * interval
        let ahead = start - now
        if ahead > tolerance { return .refused(retryAfter: ahead - tolerance) }
        return .allowed(countedUntil: start + interval)
    }

    /// Requests counted at `now` (for listings and tests): those that have not decayed yet.
    public func counted(countedUntil: Int64, now: Int64) -> Int {
        guard countedUntil > now else { return 0 }
        let ahead = countedUntil - now
        return Int(clamping: (ahead + interval - 1) / interval)
    }
}
