/// Counter-based or time-based OATH token.
public enum OATHKind: String, Sendable {
    case totp, hotp
}

/// The parameters that, with a secret, determine an OATH token's codes.
public struct OATHParameters: Sendable, Equatable {
    public var kind: OATHKind
    public var algorithm: HashAlgorithm
    public var digits: Int
    /// TOTP step in seconds (ignored for HOTP).
    public var period: Int
    /// HOTP: the next counter value the token will use (ignored for TOTP).
    public var counter: UInt64

    public init(kind: OATHKind, algorithm: HashAlgorithm = .sha1, digits: Int = 6, period: Int = 30, counter: UInt64 = 0) {
        self.kind = kind
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.counter = counter
    }

    /// A human-readable reason when a parameter is out of range.
    public var problem: String? {
        if !OTP.digitRange.contains(digits) { return "digits must be 6, 7 or 8 (got \(digits))" }
        if kind == .totp, !OTP.periodRange.contains(period) { return "period must be 1–300 seconds (got \(period))" }
        return nil
    }
}
