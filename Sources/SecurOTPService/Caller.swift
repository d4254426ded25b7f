/// Who asks the validator: decides what they may do and is written to the audit log.
public struct Caller: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// A host verifying its users (PAM module).
        case host
        /// An administrator managing tokens and access (`securotp --server`).
        case admin
        /// A push-approval device (docs/push.md): `name` is its id, `users` its one user.
        case device
        /// `securotp` run as root against a store on this machine: no credential involved.
        case local
    }

    public var kind: Kind
    public var name: String
    /// The peer's address ("local" for the CLI on this machine).
    public var address: String
    /// Hosts: whom they may verify (both empty: everyone).
    public var users: [String]
    public var groups: [String]
    /// Hosts: how many future HOTP codes per token they may cache for offline use.
    public var offlineCodes: Int
    /// Hosts: the stored hash of their credential, which keys the offline codes' hashes to
    /// them (the host computes it from its credential file; a cache file alone is useless).
    public var credentialHash: [UInt8]

    public init(kind: Kind, name: String, address: String, users: [String] = [], groups: [String] = [], offlineCodes: Int = 0,
                credentialHash: [UInt8] = []) {
        self.credentialHash = credentialHash
        self.kind = kind
        self.name = name
        self.address = address
        self.users = users
        self.groups = groups
        self.offlineCodes = offlineCodes
    }

    public static func local(_ name: String) -> Caller { Caller(kind: .local, name: name, address: "local") }
}
