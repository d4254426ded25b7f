/// The host-facing part of the /v1 API: what a PAM module (or any host) sends to verify a
/// user's passcode, and what it gets back. JSON keys are snake_case on the wire
/// (see `APICoding`); docs/api/openapi.yaml describes the same shapes.

/// `POST /v1/preflight`: what the host needs before it prompts.
public struct PreflightRequest: Codable, Sendable, Equatable {
    public var user: String
    /// The user's groups as the host's NSS resolves them: their policies (`securotp policy
    /// @GROUP` on the validator) narrow the user's methods in the answer (MethodRules.methods).
    public var groups: [String]?

    public init(user: String, groups: [String]? = nil) {
        self.user = user
        self.groups = groups
    }
}

public struct PreflightResponse: Codable, Sendable, Equatable {
    /// The user has at least one active token (or recovery codes count as none: `nullok`
    /// looks at tokens only, as the local module does).
    public var hasTokens: Bool
    /// Set when the user has an OCRA token: the challenge the validator issued (and counted
    /// as an attempt) for this login. The host shows it and sends its id with the passcode;
    /// a host never chooses a challenge.
    public var ocraChallenge: OCRAChallengeOffer?
    /// The digits of the user's active tokens, for `forward_pass` (password+code in one
    /// answer): the host sends only the trailing code, never the password.
    public var codeDigits: [Int]
    /// `true` when the user has an active push device and pushes are not blocked
    /// (docs/push.md); absent otherwise, so older hosts see the answer they know.
    public var push: Bool?
    /// `true` when the user has an active FIDO credential (docs/fido.md, "Remote mode"): the
    /// host asks for a touch through `/v1/fido/challenge`. Absent otherwise.
    public var fido: Bool?
    /// The user's login methods in order (`fido`, `push`, `otp`) when a policy or `methods=`
    /// on the validator sets them (docs/configuration.md, "Login methods"); absent: the host's default.
    public var methods: [String]?
    /// Whether the user holds a second factor at all, usable now or not (`Store.holdsFactor`):
    /// an active token, a FIDO credential in any state, a device in any state but pending. A
    /// host's `nullok` asks this, never `has_tokens`, `push` or `fido` (which say what can be
    /// used now). Absent from older validators; a host then keeps the rule of those fields.
    public var holdsFactor: Bool?

    public init(hasTokens: Bool, ocraChallenge: OCRAChallengeOffer? = nil, codeDigits: [Int], push: Bool? = nil, fido: Bool? = nil,
                methods: [String]? = nil, holdsFactor: Bool? = nil) {
        self.holdsFactor = holdsFactor
        self.hasTokens = hasTokens
        self.ocraChallenge = ocraChallenge
        self.codeDigits = codeDigits
        self.push = push
        self.fido = fido
        self.methods = methods
    }
}

/// An OCRA challenge issued by the validator: single-use, bound to the user and the host,
/// expiring after `ChallengeIssue.lifetime` seconds.
public struct OCRAChallengeOffer: Codable, Sendable, Equatable {
    /// Sent back as `challenge_id` with the passcode.
    public var id: String
    /// What the user's token is given (digits, letters or hex digits).
    public var challenge: String
    /// The response's length, for `forward_pass`.
    public var digits: Int

    public init(id: String, challenge: String, digits: Int) {
        self.id = id
        self.challenge = challenge
        self.digits = digits
    }
}

/// `POST /v1/verify`.
public struct VerifyRequest: Codable, Sendable, Equatable {
    public var user: String
    public var passcode: String
    /// The passcode is the end of a longer answer (`forward_pass`): each token's code is
    /// taken from its last digits.
    public var codeAtEnd: Bool?
    /// The id of the OCRA challenge the preflight issued and the host showed, if any.
    public var challengeId: String?
    /// Offline codes this host used while the validator was unreachable: per serial, the
    /// first counter it has not used. They are withdrawn before the passcode is checked.
    public var offlineUsed: [OfflineUsage]?
    /// The push request whose prompt took this answer (docs/push.md, "Offline approval"): the
    /// answer is first checked as the request's offline response, else the request is
    /// cancelled and the answer verified as a passcode.
    public var pushId: String?

    public init(user: String, passcode: String, codeAtEnd: Bool? = nil, challengeId: String? = nil, offlineUsed: [OfflineUsage]? = nil,
                pushId: String? = nil) {
        self.user = user
        self.passcode = passcode
        self.codeAtEnd = codeAtEnd
        self.challengeId = challengeId
        self.offlineUsed = offlineUsed
        self.pushId = pushId
    }
}

public struct OfflineUsage: Codable, Sendable, Equatable {
    public var serial: String
    public var nextUnused: Int64

    public init(serial: String, nextUnused: Int64) {
        self.serial = serial
        self.nextUnused = nextUnused
    }
}

/// `POST /v1/verify/answer`: the answer to a challenge from an earlier response.
public struct AnswerRequest: Codable, Sendable, Equatable {
    public var user: String
    public var challengeId: String
    /// The next code, the new PIN, or the passcode made with the new PIN.
    public var answer: String

    public init(user: String, challengeId: String, answer: String) {
        self.user = user
        self.challengeId = challengeId
        self.answer = answer
    }
}

public enum VerifyResultKind: String, Codable, Sendable, Equatable {
    case accept, reject, locked, challenge
}

/// What the engine decided, as a closed list a host or a metric can switch on (`reason` is
/// prose for logs and may change wording).
public enum VerifyOutcome: String, Codable, Sendable, Equatable {
    /// A token's code (online, or one of the host's reserved offline codes).
    case accepted
    /// One of the user's recovery codes.
    case recoveryCode = "recovery_code"
    case rejected
    /// A right code that was already used: refused and counted like a wrong one.
    case replayed
    case locked
    /// Another step is needed: `challenge` says which.
    case nextStep = "next_step"
    /// The request's offline response from one of the user's devices (`serial`: the device id;
    /// docs/push.md, "Offline approval").
    case pushOffline = "push_offline"

    /// The outcome a result has when nothing more specific is said.
    init(_ result: VerifyResultKind) {
        switch result {
        case .accept: self = .accepted
        case .reject: self = .rejected
        case .locked: self = .locked
        case .challenge: self = .nextStep
        }
    }
}

/// What the validator decided. `reason`, `failures` and `lockedNow` are for the host's log
/// (never a code, PIN or seed); `info` and `error` are for the user's screen.
public struct VerifyResponse: Codable, Sendable, Equatable {
    public var result: VerifyResultKind
    /// What was decided, typed; always sent by this version (optional for older validators).
    public var outcome: VerifyOutcome?
    /// accept: the token that matched ("recovery" for a recovery code, for older hosts;
    /// `outcome` says it without a magic serial).
    public var serial: String?
    /// accept: how many trailing characters of a code-at-end answer were the code.
    public var codeDigits: Int?
    public var challenge: ChallengeInfo?
    /// Why, in a few words: "wrong code", "replayed code", "token 123 expired", ...
    public var reason: String?
    public var failures: Int?
    public var lockedNow: Bool?
    public var info: String?
    public var error: String?
    /// accept (with offline caching enabled for this host): cached codes to add.
    public var offline: [OfflineCodes]?

    public init(result: VerifyResultKind, outcome: VerifyOutcome? = nil, serial: String? = nil, codeDigits: Int? = nil,
                challenge: ChallengeInfo? = nil, reason: String? = nil, failures: Int? = nil, lockedNow: Bool? = nil, info: String? = nil,
                error: String? = nil, offline: [OfflineCodes]? = nil) {
        self.result = result
        self.outcome = outcome ?? VerifyOutcome(result)
        self.serial = serial
        self.codeDigits = codeDigits
        self.challenge = challenge
        self.reason = reason
        self.failures = failures
        self.lockedNow = lockedNow
        self.info = info
        self.error = error
        self.offline = offline
    }
}

public enum ChallengeKind: String, Codable, Sendable, Equatable {
    /// Wait for the token's next code and send it (SecurID's next-tokencode mode).
    case nextCode = "next_code"
    /// Choose a new PIN: ask twice (`confirmPrompt`), send it once.
    case newPIN = "new_pin"
    /// Send a passcode made with the PIN just set.
    case passcode
}

public struct ChallengeInfo: Codable, Sendable, Equatable {
    public var id: String
    public var kind: ChallengeKind
    /// Shown with echo off.
    public var prompt: String
    /// new_pin: the second prompt; the host compares both answers itself.
    public var confirmPrompt: String?
    /// Seconds until the challenge expires.
    public var expiresIn: Int

    public init(id: String, kind: ChallengeKind, prompt: String, confirmPrompt: String? = nil, expiresIn: Int) {
        self.id = id
        self.kind = kind
        self.prompt = prompt
        self.confirmPrompt = confirmPrompt
        self.expiresIn = expiresIn
    }
}

/// Slow salted hashes of an HOTP token's coming codes, for a host to verify while the
/// validator is unreachable. Never the seed. Each hash is PBKDF2-HMAC-SHA256 over the code,
/// salted with `salt` and keyed to the host (see docs/validator.md, "Offline cache").
public struct OfflineCodes: Codable, Sendable, Equatable {
    public var serial: String
    public var digits: Int
    public var iterations: Int
    /// Drop cached codes below this counter before adding these.
    public var firstValid: Int64
    public var codes: [OfflineCode]

    public init(serial: String, digits: Int, iterations: Int, firstValid: Int64, codes: [OfflineCode]) {
        self.serial = serial
        self.digits = digits
        self.iterations = iterations
        self.firstValid = firstValid
        self.codes = codes
    }
}

public struct OfflineCode: Codable, Sendable, Equatable {
    public var counter: Int64
    /// Hex.
    public var salt: String
    /// Hex.
    public var hash: String

    public init(counter: Int64, salt: String, hash: String) {
        self.counter = counter
        self.salt = salt
        self.hash = hash
    }
}

/// `GET /v1/health`.
public struct HealthResponse: Codable, Sendable, Equatable {
    public var status: String
    /// Only for an admin credential: an anonymous caller learns nothing to pick exploits by.
    public var version: String?
    public var store: String?

    public init(status: String, version: String? = nil, store: String? = nil) {
        self.status = status
        self.version = version
        self.store = store
    }
}
