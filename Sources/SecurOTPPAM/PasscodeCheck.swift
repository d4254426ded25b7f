import SecurOTPStore

/// Who is logging in, as a login's checks need it. NSS resolution and `groups=` happen before
/// this exists, on this host, in both modes.
struct LoginContext {
    let session: PAMSession
    let settings: Settings
    /// NSS's spelling of the name (tokens, failures and locks live under it), or the name as
    /// given when NSS does not know it.
    let user: String
    /// The name for log lines ("(invalid user name)" for names no account can have).
    let shownUser: String
    /// NSS knows the user: only then do nullok and OCRA challenges apply.
    let known: Bool
    /// The name is one the store accepts (Store.validate).
    let validName: Bool
}

/// Where a login's passcodes are checked: the local store (LocalVerification) or a validator
/// (RemoteVerification). PAMAuthentication runs the conversation around either the same way —
/// first-pass handling, the prompt, forward_pass — so both modes behave alike.
protocol PasscodeCheck {
    /// Runs before any prompt, so a broken installation or an unreachable validator fails
    /// before the user types anything.
    mutating func prepare() -> Preparation
    /// Checks one answer and runs the dialogues the result asks for (next code, new PIN).
    /// `countsFailure` false: a miss is not the user's failure (try_first_pass's password).
    mutating func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool) -> Int32
    /// Right before the prompt: a step to ask instead of the plain code prompt — an approval
    /// on the user's device (remote mode) — or nil. Its answer still goes to `check`.
    mutating func offer() -> NextStep?
    /// The OCRA challenge to show in the prompt, if the user has an OCRA token.
    var challenge: String? { get }
    /// After an accepted forward_pass answer: how many trailing characters were the code.
    var matchedDigits: Int? { get }
    /// For log lines: "" for the local store, " [validator]" for a validator.
    var source: String { get }
}

extension PasscodeCheck {
    mutating func offer() -> NextStep? { nil }
    var source: String { "" }
}

enum Preparation {
    /// Prompt for the code.
    case ask
    /// End the login now with this code (PAM_IGNORE for nullok, PAM_AUTHINFO_UNAVAIL, ...).
    case finish(Int32)
    /// The factor cannot be checked and failmode=safe lets the login go on without it
    /// (PAM_IGNORE). With forward_pass the answer is still taken so the password reaches the
    /// next module.
    case skipFactor
}
