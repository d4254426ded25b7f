import SecurOTPCore
import SecurOTPStore

/// Who may call the validator (hosts, admins) and what they did (the audit log).

/// `POST /v1/hosts`, `POST /v1/admins`.
public struct CredentialRequest: Codable, Sendable, Equatable {
    public var name: String
    /// Hosts only: the users this host may verify (empty: no user restriction).
    public var users: [String]?
    /// Hosts only: Unix groups (resolved by the validator through NSS) whose members this
    /// host may verify. A host with users and groups may verify members of either.
    public var groups: [String]?
    /// Hosts only: how many future HOTP codes per token the host may cache for offline use
    /// (0: none).
    public var offlineCodes: Int?

    public init(name: String, users: [String]? = nil, groups: [String]? = nil, offlineCodes: Int? = nil) {
        self.name = name
        self.users = users
        self.groups = groups
        self.offlineCodes = offlineCodes
    }
}

/// The credential is shown once; only its hash is kept.
public struct CredentialCreated: Codable, Sendable, Equatable {
    public var name: String
    public var kind: String
    public var credential: String

    public init(name: String, kind: String, credential: String) {
        self.name = name
        self.kind = kind
        self.credential = credential
    }
}

public struct CredentialInfo: Codable, Sendable, Equatable {
    public var name: String
    /// host or admin.
    public var kind: String
    public var id: String
    public var created: Int64
    /// 0: in force.
    public var revoked: Int64
    public var users: [String]
    public var groups: [String]
    public var offlineCodes: Int
    public var lastUsed: Int64

    public init(name: String, kind: String, id: String, created: Int64, revoked: Int64, users: [String], groups: [String],
                offlineCodes: Int, lastUsed: Int64) {
        self.name = name
        self.kind = kind
        self.id = id
        self.created = created
        self.revoked = revoked
        self.users = users
        self.groups = groups
        self.offlineCodes = offlineCodes
        self.lastUsed = lastUsed
    }
}

public struct CredentialList: Codable, Sendable, Equatable {
    public var credentials: [CredentialInfo]

    public init(credentials: [CredentialInfo]) { self.credentials = credentials }
}

/// One audited action. Never holds a code, PIN, seed or credential.
public struct AuditEntry: Codable, Sendable, Equatable {
    public var id: Int64
    public var time: Int64
    /// host, admin, or local (the CLI on the validator's own store).
    public var actorKind: String
    public var actor: String
    /// The caller's address ("local" for the CLI).
    public var address: String
    /// verify, answer, enroll, import, delete, ... (the API operation).
    public var action: String
    public var user: String
    public var serial: String
    /// accept, reject, locked, challenge, ok, denied, error.
    public var result: String
    public var detail: String

    public init(id: Int64 = 0, time: Int64, actorKind: String, actor: String, address: String, action: String, user: String,
                serial: String, result: String, detail: String) {
        self.id = id
        self.time = time
        self.actorKind = actorKind
        self.actor = actor
        self.address = address
        self.action = action
        self.user = user
        self.serial = serial
        self.result = result
        self.detail = detail
    }

    /// What a backend stores: every field bounded and printable, whatever a caller sent, so
    /// no row can fill a disk or the audit view, or carry a terminal escape. A valid user name
    /// is kept as it is (`securotp audit USER` finds it); an invalid one becomes a short
    /// escaped excerpt with its length.
    public func bounded() -> AuditEntry {
        func field(_ text: String, _ maxBytes: Int) -> String { TerminalText.bounded(TerminalText.escaped(text), maxBytes: maxBytes) }
        var entry = self
        entry.actorKind = field(actorKind, 16)
        entry.actor = field(actor, 128)
        entry.address = field(address, 64)
        entry.action = field(action, 32)
        if !user.isEmpty, (try? InputRules.validate(user: user)) == nil {
            entry.user = "(invalid, \(user.utf8.count) bytes) " + TerminalText.excerpt(user)
        }
        entry.serial = field(serial, 128)
        entry.result = field(result, 16)
        entry.detail = field(detail, 512)
        return entry
    }
}

public struct AuditList: Codable, Sendable, Equatable {
    public var entries: [AuditEntry]

    public init(entries: [AuditEntry]) { self.entries = entries }
}

/// Every error answer: one envelope. `code` is stable (scripts and the CLI map it to exit
/// codes); `message` says what is wrong and what to do.
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    public struct Body: Codable, Sendable, Equatable {
        public var code: String
        public var message: String

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var error: Body

    public init(code: String, message: String) { error = Body(code: code, message: message) }
}
