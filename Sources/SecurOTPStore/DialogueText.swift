import SecurOTPCore

/// What the user reads during a login, in one place: the PAM module shows these in local mode,
/// and the validator sends the same texts to hosts in remote mode.
public enum DialogueText {
    public static let replayed = "That code was already used. Wait for the next one."
    public static let nextCode = "Wait for the code on your token to change, then enter the new code: "
    public static let newPINAgain = "Enter the new PIN again: "
    public static let pinsDiffer = "The PINs differ. Log in again to set your PIN."

    public static func recoveryCodeAccepted(remaining: Int) -> String {
        "Recovery code accepted. \(remaining) left; ask your administrator for new ones when they run low."
    }

    public static func newPIN(_ mode: PINMode) -> String {
        "Enter a new PIN (\(mode == .addedByToken ? "4 to 8 digits" : "4 to 8 letters or digits")): "
    }

    public static func pinRefused(_ problem: String) -> String { "PIN refused: \(problem). Log in again to set your PIN." }

    /// A refused code the module may not explain further: a wrong code, and also a code not
    /// checked because the user is locked (a lock this login did not cause must look like a
    /// wrong code: docs/security.md, "What a refused user is told").
    public static let refused = "Code refused (wrong, or locked after repeated failures)."

    /// This login's own failures locked the user (docs/security.md): `unlockTime` as in
    /// VerifyPolicy (0: until an admin unlocks), nil when this host does not know it.
    public static func locked(unlockTime: Int64?) -> String {
        guard let unlockTime else { return "Too many failed codes: locked; ask an admin to unlock you." }
        guard unlockTime > 0 else { return "Too many failed codes: locked until an admin unlocks you." }
        let duration = unlockTime % 60 == 0 ? Wording.count(Int(unlockTime / 60), "minute") : Wording.count(Int(unlockTime), "second")
        return "Too many failed codes: locked for \(duration); ask an admin to unlock you sooner."
    }

    /// The code could not be checked: the token store or the validator is unavailable.
    public static let unavailable = "Codes cannot be checked right now; ask an admin."

    /// Push approval (docs/push.md, "What the user sees"): the number is one group of six
    /// digits, in the prompt itself — OpenSSH holds messages until the next prompt, so a number
    /// in a message would not be seen over ssh in time. The same prompt takes a passcode.
    public static func approveOnDevice(number: String) -> String {
        "Approve on your device with number \(number), or type a code: "
    }

    /// The same, with the offline challenge (docs/push.md, "Offline approval") in two groups of
    /// four digits, so that the number stays the prompt's only group of six.
    public static func approveOnDevice(number: String, offlineChallenge: String) -> String {
        "Approve on your device with number \(number), or type a code (offline challenge \(offlineChallenge)): "
    }

    /// Why the ordinary code prompt follows an approval prompt, put in front of it (messages
    /// are silenced under sudo, a prompt never is).
    public static let approvalDenied = "Not approved on your device."
    public static let approvalExpired = "No approval from your device in time."
    public static let approvalFailed = "Wrong number typed on your device."
    public static let approvalRefused = "Your device's approval was refused."
    public static let approvalUnavailable = "Your device cannot be asked right now."

    public static func pinSet(_ mode: PINMode) -> String {
        let how = mode == .addedByToken ? "the passcode your token shows with the new PIN" : "your new PIN followed by the next code"
        return "PIN set. Wait for the code to change, then enter \(how): "
    }
}

/// Counted nouns for log lines and messages: "1 consecutive failure", "2 consecutive failures".
public enum Wording {
    /// `count` and the noun, the plural made by adding "s" unless `plural` is given.
    public static func count(_ count: Int, _ singular: String, plural: String? = nil) -> String {
        "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
    }
}
