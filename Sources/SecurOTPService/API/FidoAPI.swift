import SecurOTPStore

/// The FIDO part of the host API (docs/fido.md, "Remote mode"): the validator keeps a user's
/// security-key credentials and counters, issues the challenge and checks the assertion the
/// host's key made; the host only asks for the touch.

/// `POST /v1/fido/challenge`.
public struct FidoChallengeRequest: Codable, Sendable, Equatable {
    public var user: String
    /// The host's `origin=` (RP ID): credentials made for it are offered.
    public var origin: String
    /// The host's `appid=` (old U2F-format credentials), when it differs from the origin.
    public var appid: String?

    public init(user: String, origin: String, appid: String? = nil) {
        self.user = user
        self.origin = origin
        self.appid = appid
    }
}

/// One credential a host may ask its keys for.
public struct FidoAllowedCredential: Codable, Sendable, Equatable {
    public var serial: String
    /// base64url.
    public var keyHandle: String
    /// es256, eddsa (rs256 credentials are offered too and refused by the check).
    public var type: String
    /// The RP ID the assertion is made for.
    public var origin: String
    public var presence: Bool
    public var verification: Bool
    public var pin: Bool
}

public struct FidoChallengeResponse: Codable, Sendable, Equatable {
    /// Sent back with the assertion; single use, bound to the user and this host.
    public var id: String
    /// base64url of 32 bytes the host puts into the client data it builds and has its key sign
    /// (FidoClientData; docs/fido.md, "What the key signs"): never a hash for the key to sign.
    public var challenge: String
    /// Seconds the host has to send the assertion.
    public var expiresIn: Int
    /// The user's usable credentials for the origin (none for a locked user, a user without
    /// credentials, or one outside the host's scope: the host then asks for no touch).
    public var credentials: [FidoAllowedCredential]
}

/// `POST /v1/fido/verify`: the assertion of one credential, or `declined` when the key was
/// there and the user did not touch it (counted like a wrong code).
public struct FidoVerifyRequest: Codable, Sendable, Equatable {
    public var user: String
    /// The challenge's id.
    public var id: String
    public var serial: String
    /// base64url of the client data the host built (FidoClientData) and had its key sign the
    /// SHA-256 of; required with an assertion.
    public var clientData: String?
    /// base64url.
    public var authenticatorData: String?
    /// base64url.
    public var signature: String?
    public var declined: Bool?

    public init(user: String, id: String, serial: String, clientData: String? = nil, authenticatorData: String? = nil, signature: String? = nil,
                declined: Bool? = nil) {
        self.user = user
        self.id = id
        self.serial = serial
        self.clientData = clientData
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.declined = declined
    }
}

/// `POST /v1/users/{user}/fido` (admin): credentials to keep for the user, all or none —
/// pamu2fcfg's fields (`KH,PK,type,attributes`), each with the RP ID it was made for.
public struct FidoAddRequest: Codable, Sendable, Equatable {
    public struct Item: Codable, Sendable, Equatable {
        /// `KH,PK,type,attributes` (standard base64, as pamu2fcfg prints it).
        public var credential: String
        public var origin: String

        public init(credential: String, origin: String) {
            self.credential = credential
            self.origin = origin
        }
    }

    public var credentials: [Item]
    /// enroll, pamu2fcfg or mapping-file.
    public var source: String

    public init(credentials: [Item], source: String) {
        self.credentials = credentials
        self.source = source
    }
}

/// One kept credential (`GET /v1/users/{user}/fido`).
public struct FidoCredentialInfo: Codable, Sendable, Equatable {
    public var serial: String
    public var credential: String
    public var origin: String
    public var counter: Int64
    /// active or cloned.
    public var state: String
    public var created: Int64
    public var lastUsed: Int64
    public var source: String

    public init(_ credential: FidoCredential) {
        serial = credential.serial
        self.credential = credential.u2fField
        origin = credential.origin
        counter = Int64(credential.counter)
        state = credential.cloned ? "cloned" : "active"
        created = credential.created
        lastUsed = credential.lastUsed
        source = credential.source
    }

    /// The credential again (nil when the field does not parse).
    public var parsed: FidoCredential? {
        guard var value = FidoCredential.parse(field: Substring(credential), origin: origin).credential else { return nil }
        value.serial = serial
        value.counter = UInt32(clamping: counter)
        value.cloned = state != "active"
        value.created = created
        value.lastUsed = lastUsed
        value.source = source
        return value
    }
}

public struct FidoCredentialList: Codable, Sendable, Equatable {
    public var credentials: [FidoCredentialInfo]

    public init(credentials: [FidoCredentialInfo]) { self.credentials = credentials }
}
