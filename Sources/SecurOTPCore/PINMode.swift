/// How a token's PIN (if any) enters the passcode the user types.
public enum PINMode: String, Sendable, Equatable {
    /// No PIN: the passcode is the tokencode.
    case none
    /// Fob style: the user types the PIN, then the tokencode shown by the token.
    case prefix
    /// PINPad style: the token adds the PIN into the tokencode, digit by digit modulo 10
    /// (SecurID AddPIN, PSKC PINUsageMode "Algorithmic").
    case addedByToken = "added"
}
