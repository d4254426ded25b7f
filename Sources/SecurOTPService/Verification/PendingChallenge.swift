import SecurOTPCore
import SecurOTPStore

/// A dialogue step the validator started and a host must finish (next tokencode, new PIN,
/// passcode after a new PIN), or an OCRA challenge a preflight handed out. Kept in the store,
/// not in memory, so the answer may reach another validator node; single-use and short-lived.
public struct PendingChallenge: Sendable, Equatable {
    /// Seconds a host has to answer.
    public static let lifetime: Int64 = 180

    public var id: String
    public var user: String
    /// The host credential's name: only the host that got the challenge may answer it.
    public var host: String
    public var kind: PendingKind
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

    public init(id: String, user: String, host: String, kind: PendingKind, serial: String, position: Int64, pinMode: PINMode,
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

    /// A dialogue step `step` of token `serial` for `user`, answered by `host` within `lifetime`.
    static func step(_ step: ChallengeKind, user: String, host: String, serial: String, position: Int64 = 0, pinMode: PINMode,
                     remaining: Int, now: Int64) throws(StoreError) -> (PendingChallenge, ChallengeInfo) {
        guard let id = freshID() else { throw StoreError(.system, "no randomness available") }
        let pending = PendingChallenge(id: id, user: user, host: host, kind: .step(step), serial: serial, position: position,
                                       pinMode: pinMode, remaining: remaining, expires: now + lifetime)
        return (pending, info(step, id: id, pinMode: pinMode))
    }

    /// What a host is told of a dialogue step: the prompt to show and how long it may take.
    static func info(_ step: ChallengeKind, id: String, pinMode: PINMode) -> ChallengeInfo {
        switch step {
        case .nextCode:
            ChallengeInfo(id: id, kind: step, prompt: DialogueText.nextCode, expiresIn: Int(lifetime))
        case .newPIN:
            ChallengeInfo(id: id, kind: step, prompt: DialogueText.newPIN(pinMode), confirmPrompt: DialogueText.newPINAgain,
                          expiresIn: Int(lifetime))
        case .passcode:
            ChallengeInfo(id: id, kind: step, prompt: DialogueText.pinSet(pinMode), expiresIn: Int(lifetime))
        }
    }
}

/// What a pending challenge waits for, stored as text (`rawValue`): a dialogue step, answered
/// through `/v1/verify/answer` (its wire name), or an OCRA challenge a preflight handed out
/// (`ocra`), answered with the passcode through `/v1/verify`'s `challenge_id`, never as a step.
public enum PendingKind: Sendable, Equatable, RawRepresentable {
    case step(ChallengeKind)
    case ocraChallenge
    /// A security-key challenge (`/v1/fido/challenge`), answered through `/v1/fido/verify` only.
    case fido

    public init?(rawValue: String) {
        if rawValue == "ocra" {
            self = .ocraChallenge
        } else if rawValue == "fido" {
            self = .fido
        } else if let step = ChallengeKind(rawValue: rawValue) {
            self = .step(step)
        } else {
            return nil
        }
    }

    public var rawValue: String {
        switch self {
        case .step(let step): step.rawValue
        case .ocraChallenge: "ocra"
        case .fido: "fido"
        }
    }
}
