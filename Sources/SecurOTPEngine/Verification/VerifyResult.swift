import SecurOTPCore

public enum VerifyOutcome: Sendable, Equatable {
    /// `digits` tells a caller with password+code input where the code began.
    case accepted(serial: String, digits: Int)
    /// A single-use recovery code was accepted and is now spent.
    case acceptedRecoveryCode(remaining: Int)
    case rejected
    /// The code was right but its step or counter was used before.
    case replayed(serial: String)
    /// Locked by earlier failures; nothing was checked.
    case locked
    /// The tokencode was right (and is now used up) but the token needs a new PIN first:
    /// set one with `setPIN`, then ask for a passcode made with it.
    case newPINRequired(serial: String, pinMode: PINMode)
    /// The code matched only outside the window, or failures reached `nextCodeAfter`:
    /// ask for the token's next code and check it with `verifyNextCode(position:)`.
    case nextCodeRequired(serial: String, position: Int64)
}

public struct VerifyResult: Sendable, Equatable {
    public var outcome: VerifyOutcome
    /// Whether the user has tokens: false when the answer was checked against the user's
    /// tokens and the snapshot held no active one (expired ones count as tokens) — a user
    /// without tokens, or an unknown user. True otherwise, also for a locked user and a
    /// recovery-code attempt, which are not checked against tokens. No product decides on it
    /// (nullok and preflight's `has_tokens` ask the store before the prompt); tests read it.
    public var userHasTokens: Bool
    /// Failures so far after this attempt, and whether this attempt caused a lock.
    public var failures: Int
    public var lockedNow: Bool
    /// Why, for the admin's log (never a code, PIN or seed): "wrong PIN", "token expired", ...
    public var note: String = ""

    public init(outcome: VerifyOutcome, userHasTokens: Bool, failures: Int, lockedNow: Bool, note: String = "") {
        self.outcome = outcome
        self.userHasTokens = userHasTokens
        self.failures = failures
        self.lockedNow = lockedNow
        self.note = note
    }
}

/// What `VerificationEngine.issueChallenge` decided before an OCRA challenge is shown.
public enum ChallengeIssue: Sendable, Equatable {
    /// Seconds an issued challenge may be answered in; later, the response is not checked
    /// (the attempt stays counted).
    public static let lifetime: Int64 = 180

    /// Draw a challenge of `suite` (OCRA token `serial`'s) and show it; the answer is checked
    /// against it (and the user's other tokens) with `charged: true`.
    case issued(serial: String, suite: OCRASuite)
    /// Locked: nothing was issued. Show a throwaway challenge of `suite`, so the prompt looks
    /// the same, and let the verification answer `.locked`.
    case locked(suite: OCRASuite)
}
