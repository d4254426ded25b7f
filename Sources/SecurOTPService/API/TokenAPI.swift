/// The admin part of the /v1 API: every `securotp` operation, so `securotp --server URL`
/// manages users centrally with the same commands and output as against the local store.

/// One token as every listing shows it: never its seed or PIN. Times are Unix seconds (0: never).
public struct TokenInfo: Codable, Sendable, Equatable {
    public var serial: String
    public var user: String
    public var nickname: String
    /// totp, hotp, securid, ocra.
    public var kind: String
    /// SHA1, SHA256, SHA512 (SecurID: AES-128).
    public var algorithm: String
    public var digits: Int
    /// Time tokens: seconds per code; nil for HOTP and OCRA.
    public var period: Int?
    /// HOTP and counter-based OCRA: the next counter; nil otherwise.
    public var counter: Int64?
    public var issuer: String
    public var state: String
    public var created: Int64
    public var lastUsed: Int64
    public var expires: Int64
    /// none, prefix (fob: PIN typed before the code), added (PINPad: the token adds it).
    public var pinMode: String
    public var pinSet: Bool
    public var pinChangeRequired: Bool
    /// enroll, or the import format.
    public var source: String
    /// OCRA suite; nil for other kinds.
    public var suite: String?
    /// Learned clock drift in steps (time tokens).
    public var drift: Int64
    /// The owner is locked after repeated failures (listings only).
    public var userLocked: Bool?

    public init(serial: String, user: String, nickname: String, kind: String, algorithm: String, digits: Int, period: Int?,
                counter: Int64?, issuer: String, state: String, created: Int64, lastUsed: Int64, expires: Int64, pinMode: String,
                pinSet: Bool, pinChangeRequired: Bool, source: String, suite: String?, drift: Int64, userLocked: Bool? = nil) {
        self.serial = serial
        self.user = user
        self.nickname = nickname
        self.kind = kind
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.counter = counter
        self.issuer = issuer
        self.state = state
        self.created = created
        self.lastUsed = lastUsed
        self.expires = expires
        self.pinMode = pinMode
        self.pinSet = pinSet
        self.pinChangeRequired = pinChangeRequired
        self.source = source
        self.suite = suite
        self.drift = drift
        self.userLocked = userLocked
    }
}

public struct TokenList: Codable, Sendable, Equatable {
    public var tokens: [TokenInfo]

    public init(tokens: [TokenInfo]) { self.tokens = tokens }
}

/// `POST /v1/users/{user}/tokens`: a new token whose seed the validator makes.
public struct EnrollRequest: Codable, Sendable, Equatable {
    /// totp (default), hotp or ocra.
    public var kind: String?
    public var algorithm: String?
    public var digits: Int?
    public var period: Int?
    public var issuer: String?
    public var nickname: String?
    /// OCRA suite (kind ocra).
    public var suite: String?

    public init(kind: String? = nil, algorithm: String? = nil, digits: Int? = nil, period: Int? = nil, issuer: String? = nil,
                nickname: String? = nil, suite: String? = nil) {
        self.kind = kind
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
        self.issuer = issuer
        self.nickname = nickname
        self.suite = suite
    }
}

/// The seed is returned once, base32, for the QR code or manual entry; it is never shown again.
public struct EnrollResponse: Codable, Sendable, Equatable {
    public var token: TokenInfo
    public var secret: String

    public init(token: TokenInfo, secret: String) {
        self.token = token
        self.secret = secret
    }
}

/// `POST /v1/users/{user}/tokens/import`: a token file or string, parsed by the validator
/// (so device binding is checked against the validator's binding ID for the user).
public struct ImportRequest: Codable, Sendable, Equatable {
    /// The file's bytes, base64.
    public var source: String
    public var password: String?
    /// PSKC pre-shared transport key, hex.
    public var keyHex: String?
    public var nickname: String?

    public init(source: String, password: String? = nil, keyHex: String? = nil, nickname: String? = nil) {
        self.source = source
        self.password = password
        self.keyHex = keyHex
        self.nickname = nickname
    }
}

public struct NicknameRequest: Codable, Sendable, Equatable {
    public var nickname: String

    public init(nickname: String) { self.nickname = nickname }
}

public struct PINRequest: Codable, Sendable, Equatable {
    public var pin: String

    public init(pin: String) { self.pin = pin }
}

public struct ResyncRequest: Codable, Sendable, Equatable {
    public var first: String
    public var second: String

    public init(first: String, second: String) {
        self.first = first
        self.second = second
    }
}

public struct ResyncResponse: Codable, Sendable, Equatable {
    public var kind: String
    public var drift: Int64
    public var counter: Int64
    /// "token clock 2 steps ahead", "next counter 17", ...
    public var description: String

    public init(kind: String, drift: Int64, counter: Int64, description: String) {
        self.kind = kind
        self.drift = drift
        self.counter = counter
        self.description = description
    }
}

public struct RecoveryCodesRequest: Codable, Sendable, Equatable {
    public var count: Int?

    public init(count: Int? = nil) { self.count = count }
}

public struct RecoveryCodesResponse: Codable, Sendable, Equatable {
    public var user: String
    public var codes: [String]

    public init(user: String, codes: [String]) {
        self.user = user
        self.codes = codes
    }
}

public struct BindingIDResponse: Codable, Sendable, Equatable {
    public var user: String
    public var bindingId: String

    public init(user: String, bindingId: String) {
        self.user = user
        self.bindingId = bindingId
    }
}

public struct ResetResponse: Codable, Sendable, Equatable {
    public var removed: Int

    public init(removed: Int) { self.removed = removed }
}

public struct UnlockResponse: Codable, Sendable, Equatable {
    public var wasLocked: Bool

    public init(wasLocked: Bool) { self.wasLocked = wasLocked }
}

/// `GET /v1/status`.
public struct StatusResponse: Codable, Sendable, Equatable {
    /// sqlite or postgres.
    public var store: String
    /// The database path, or the PostgreSQL URL without its password.
    public var location: String
    public var schemaVersion: Int64
    public var users: Int
    public var tokens: Int
    public var totpTokens: Int
    public var hotpTokens: Int
    public var lockedUsers: [String]

    public init(store: String, location: String, schemaVersion: Int64, users: Int, tokens: Int, totpTokens: Int, hotpTokens: Int,
                lockedUsers: [String]) {
        self.store = store
        self.location = location
        self.schemaVersion = schemaVersion
        self.users = users
        self.tokens = tokens
        self.totpTokens = totpTokens
        self.hotpTokens = hotpTokens
        self.lockedUsers = lockedUsers
    }
}
