import SecurOTPCore

/// What algorithm produces a token's codes.
public enum TokenKind: String, Sendable, Equatable {
    case totp, hotp
    /// RSA SecurID 128-bit, time-based (AES); `parameters` holds its digits and interval.
    case securid
    /// OCRA (RFC 6287) challenge-response; `suite` says everything.
    case ocra
}

/// One enrolled token as the store describes it (never with its seed or PIN).
public struct TokenRecord: Sendable, Equatable {
    public var serial: String
    public var user: String
    public var kind: TokenKind
    /// OATH parameters; for SecurID only `digits` and `period` (the interval) apply.
    public var parameters: OATHParameters
    /// Last accepted TOTP step (-1: none yet). HOTP keeps its next counter in `parameters`.
    public var lastStep: Int64
    public var nickname: String
    public var issuer: String
    /// `active` is the only state securotp writes; a row in another state (written by hand or
    /// by a later version) is listed but never verified. The SQL that reads snapshots filters
    /// on the same text (`state = 'active'`).
    public var state: String
    public var created: Int64
    public var lastUsed: Int64
    public var pinMode: PINMode = .none
    /// A PIN hash is stored (the PIN itself never is).
    public var hasPIN = false
    public var pinLength = 0
    /// The admin asked for a new PIN (`securotp pin require`): set at the next login.
    public var pinChangeRequired = false
    /// Unix time after which the token is refused (0: no expiry).
    public var expires: Int64 = 0
    /// Learned clock drift in time steps, applied to the window's centre.
    public var drift: Int64 = 0
    /// "enroll", or the import format ("otpauth", "pskc", "sdtid", "ctf", ...).
    public var source = "enroll"
    /// OCRA suite, e.g. OCRA-1:HOTP-SHA1-6:QN08 (empty for other kinds).
    public var suite = ""

    /// The fields every token has; the rest start at their defaults (no PIN, no expiry).
    public init(serial: String, user: String, kind: TokenKind, parameters: OATHParameters, lastStep: Int64, nickname: String,
                issuer: String, state: String, created: Int64, lastUsed: Int64) {
        self.serial = serial
        self.user = user
        self.kind = kind
        self.parameters = parameters
        self.lastStep = lastStep
        self.nickname = nickname
        self.issuer = issuer
        self.state = state
        self.created = created
        self.lastUsed = lastUsed
    }

    /// A PIN is part of the passcode but none is set yet: the next login sets one.
    public var needsNewPIN: Bool { pinMode != .none && (!hasPIN || pinChangeRequired) }

    public func isExpired(at now: Int64) -> Bool { expires > 0 && now >= expires }
}

/// A user's failure count and lock.
public struct UserState: Sendable, Equatable {
    public static let lockedUntilUnlocked = Int64.max
    /// No failures, no lock: what a user without a failure row has.
    public static let clear = UserState(failures: 0, lockedUntil: 0)

    public var failures: Int
    /// 0: not locked; a Unix time; or `lockedUntilUnlocked` (only `securotp unlock` lifts it).
    public var lockedUntil: Int64

    public init(failures: Int, lockedUntil: Int64) {
        self.failures = failures
        self.lockedUntil = lockedUntil
    }

    public func isLocked(at now: Int64) -> Bool { lockedUntil != 0 && now < lockedUntil }
}

extension TokenRecord {
    /// The state of a token that logins may use.
    public static let active = "active"
    public var isActive: Bool { state == Self.active }
}
