import SecurOTPCore

/// What the authenticator knows about one token, without its seed.
public struct StoredToken: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case totp, hotp
        /// RSA SecurID 128-bit, time-based.
        case securid
    }

    /// The issuer's serial (SecurID, PSKC), or 10 random digits for tokens that came without one.
    public var serial: String
    public var kind: Kind
    /// HMAC hash of TOTP/HOTP tokens (SHA1 for SecurID, where it has no meaning).
    public var algorithm: HashAlgorithm
    public var digits: Int
    /// Seconds per code for TOTP and SecurID; 0 for HOTP.
    public var period: Int
    /// HOTP: the counter the next code is made from; 0 otherwise.
    public var counter: UInt64
    /// `.addedByToken` (PINPad): `code` adds the user's PIN into the code, as the device would.
    public var pinMode: PINMode
    /// Unix time from which the token is refused; 0: no expiry.
    public var expires: Int64
    public var nickname: String
    public var issuer: String
    public var account: String
    /// Import format: otpauth, otpauth-migration, pskc, sdtid, ctf.
    public var source: String
    public var created: Int64

    public func isExpired(at unixTime: Int64) -> Bool { expires > 0 && unixTime >= expires }
}

/// What `code` shows for a token at one moment.
public struct ShownCodes: Sendable, Equatable {
    public var token: StoredToken
    /// The code to type now (with the PIN added for PINPad tokens when a PIN was given).
    public var current: String
    /// The code of the following interval (TOTP, SecurID); nil for HOTP, whose next code is
    /// what the next `code` shows.
    public var next: String?
    /// Seconds until `current` changes; nil for HOTP.
    public var secondsRemaining: Int?
    /// HOTP: the counter `current` was made from (the stored counter has moved past it).
    public var counter: UInt64?
    /// True when a PIN was added into the codes.
    public var pinApplied: Bool
}
