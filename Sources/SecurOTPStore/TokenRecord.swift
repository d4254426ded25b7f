import SecurOTPCore

/// One enrolled token as the store describes it (never with its seed).
public struct TokenRecord: Sendable, Equatable {
    public var serial: String
    public var user: String
    public var parameters: OATHParameters
    /// Last accepted TOTP step (-1: none yet). HOTP keeps its next counter in `parameters`.
    public var lastStep: Int64
    public var nickname: String
    public var issuer: String
    public var state: String
    public var created: Int64
    public var lastUsed: Int64
}

/// A user's failure count and lock.
public struct UserState: Sendable, Equatable {
    public static let lockedUntilUnlocked = Int64.max

    public var failures: Int
    /// 0: not locked; a Unix time; or `lockedUntilUnlocked` (only `securotp unlock` lifts it).
    public var lockedUntil: Int64

    public func isLocked(at now: Int64) -> Bool { lockedUntil != 0 && now < lockedUntil }
}
