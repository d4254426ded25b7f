import SecurOTPCore
import SecurOTPStore

/// A dialogue step the validator started and a host must finish (next tokencode, new PIN,
/// passcode after a new PIN). Kept in the store, not in memory, so the answer may reach
/// another validator node; single-use and short-lived.
public struct PendingChallenge: Sendable, Equatable {
    /// Seconds a host has to answer.
    public static let lifetime: Int64 = 180

    public var id: String
    public var user: String
    /// The host credential's name: only the host that got the challenge may answer it.
    public var host: String
    public var kind: ChallengeKind
    public var serial: String
    /// next_code: the step or counter the first code matched.
    public var position: Int64
    /// new_pin, passcode: the token's PIN mode.
    public var pinMode: PINMode
    /// How many more dialogue steps this login may start (as in the PAM module's local mode).
    public var remaining: Int
    public var expires: Int64

    /// 128 random bits, hex; nil without kernel randomness.
    static func freshID() -> String? {
        SecretBytes.random(count: 16).map { $0.withUnsafeBytes { Hex.encode($0) } }
    }

    public init(id: String, user: String, host: String, kind: ChallengeKind, serial: String, position: Int64, pinMode: PINMode,
                remaining: Int, expires: Int64) {
        self.id = id
        self.user = user
        self.host = host
        self.kind = kind
        self.serial = serial
        self.position = position
        self.pinMode = pinMode
        self.remaining = remaining
        self.expires = expires
    }

    var info: ChallengeInfo {
        switch kind {
        case .nextCode:
            ChallengeInfo(id: id, kind: kind, prompt: DialogueText.nextCode, expiresIn: Int(Self.lifetime))
        case .newPIN:
            ChallengeInfo(id: id, kind: kind, prompt: DialogueText.newPIN(pinMode), confirmPrompt: DialogueText.newPINAgain,
                          expiresIn: Int(Self.lifetime))
        case .passcode:
            ChallengeInfo(id: id, kind: kind, prompt: DialogueText.pinSet(pinMode), expiresIn: Int(Self.lifetime))
        case .ocra:
            // Never a dialogue step: the preflight hands it out as an OCRAChallengeOffer.
            ChallengeInfo(id: id, kind: kind, prompt: "", expiresIn: Int(ChallengeIssue.lifetime))
        }
    }
}
