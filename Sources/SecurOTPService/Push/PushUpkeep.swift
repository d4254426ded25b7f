/// Two duties of a push store beside DeviceService (issue 25, docs/push.md "Limits are rates"
/// and "What leaves the host"), apart so that only the stores (SQLite, PostgreSQL) carry them;
/// securotpd finds them by a cast, as PushChangeFeed.
public protocol PushUpkeep: Sendable {
    /// Any successful login of `user` — a passcode, a security key, a push — clears the
    /// requests counted against `push_limit` (PushRate). securotpd calls it for every accepted
    /// host verification (HostRoutes); a push's own success clears them in its transaction.
    func loginSucceeded(user: String) async throws(ServiceError)

    /// Ends the pending requests past their expiry (`expired`; the schema blanks a request's
    /// context as it leaves `pending`) and deletes requests `PushUpkeepRules.keptSeconds` past
    /// it. Returns how many it ended. securotpd runs it every `PushUpkeepRules.sweepSeconds`.
    func sweepPushRequests(now: Int64) async throws(ServiceError) -> Int
}

public enum PushUpkeepRules {
    /// Ended requests are kept this long past their expiry, without their context, for the
    /// host's late reads and results (the audit log keeps what happened).
    public static let keptSeconds: Int64 = 86_400
    /// How often securotpd sweeps: a request nobody ended keeps its context at most this long
    /// past its expiry.
    public static let sweepSeconds: Int64 = 10
}
