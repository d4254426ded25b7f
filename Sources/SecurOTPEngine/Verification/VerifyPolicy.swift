/// How a passcode is checked: windows, look-ahead, resync and lockout.
public struct VerifyPolicy: Sendable, Equatable {
    /// TOTP and SecurID: steps accepted either side of the current one (plus learned drift).
    public var window = 1
    /// HOTP: counter values accepted ahead of the next expected one.
    public var hotpLookahead = 10
    /// How far outside the window a code may lie and still start the next-tokencode
    /// dialogue (steps either side for time tokens, counter values ahead for HOTP; 0: never).
    public var resyncWindow = 50
    /// After this many consecutive failures even a right code must be followed by the
    /// token's next code (SecurID's next-tokencode mode; 0: never). Not for OCRA tokens,
    /// whose responses answer challenges and have no next code.
    public var nextCodeAfter = 0
    /// Consecutive failures that lock the user (0: never lock).
    public var deny = 5
    /// Seconds a lock lasts (0: until `securotp unlock`).
    public var unlockTime: Int64 = 600

    public init() {}
}
