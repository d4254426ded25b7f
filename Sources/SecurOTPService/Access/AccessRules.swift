import SecurOTPStore

/// A stored credential (never the secret itself), as every backend keeps it.
public struct CredentialRecord: Sendable, Equatable {
    public var id: String
    public var kind: CredentialKind
    public var name: String
    public var secretHash: [UInt8]
    public var users: [String]
    public var groups: [String]
    public var offlineCodes: Int
    public var created: Int64
    public var revoked: Int64
    public var lastUsed: Int64

    public init(id: String, kind: CredentialKind, name: String, secretHash: [UInt8], users: [String], groups: [String], offlineCodes: Int,
                created: Int64, revoked: Int64, lastUsed: Int64) {
        self.id = id
        self.kind = kind
        self.name = name
        self.secretHash = secretHash
        self.users = users
        self.groups = groups
        self.offlineCodes = offlineCodes
        self.created = created
        self.revoked = revoked
        self.lastUsed = lastUsed
    }

    public var info: CredentialInfo {
        CredentialInfo(name: name, kind: kind.rawValue, id: id, created: created, revoked: revoked, users: users,
                       groups: groups, offlineCodes: offlineCodes, lastUsed: lastUsed)
    }
}

/// Who may hold a credential and what a presented one proves, for every backend.
public enum AccessRules {
    /// One answer for unknown, malformed, revoked and wrong credentials.
    public static let refused = ServiceError(.unauthorized, "missing, unknown or revoked credential")

    static let offlineCodeRange = 0...100

    public static func duplicate(_ kind: CredentialKind, _ name: String) -> ServiceError {
        ServiceError(.conflict, "\(kind.rawValue) \(name) already has a credential; revoke it first: securotp \(kind.rawValue) revoke \(name)")
    }

    /// Names of hosts and admins: 1–64 of letters, digits, dot, dash, underscore, @.
    static func checked(name: String) throws(ServiceError) -> String {
        guard !name.isEmpty, name.utf8.count <= 64,
              name.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic && $0.isASCII || ("0"..."9").contains($0) || ".-_@".unicodeScalars.contains($0) })
        else { throw ServiceError(.invalidInput, "\"\(name)\" is not a usable name (1–64 letters, digits, '.', '-', '_', '@')") }
        return name
    }

    public static func newCredential(kind: CredentialKind, _ request: CredentialRequest, now: Int64) throws(ServiceError) -> (CredentialRecord, Credential) {
        let name = try checked(name: request.name)
        let users = request.users ?? []
        let groups = request.groups ?? []
        let offline = request.offlineCodes ?? 0
        if kind == .admin, !users.isEmpty || !groups.isEmpty || offline != 0 {
            throw ServiceError(.invalidInput, "users, groups and offline codes apply to hosts only")
        }
        for user in users {
            do throws(StoreError) { try Store.validate(user: user) } catch { throw ServiceError(error) }
        }
        for group in groups where group.isEmpty || group.contains(",") || group.utf8.count > 256 {
            throw ServiceError(.invalidInput, "\"\(group)\" is not a usable group name")
        }
        guard offlineCodeRange.contains(offline) else {
            throw ServiceError(.invalidInput, "offline codes must be \(offlineCodeRange.lowerBound)–\(offlineCodeRange.upperBound) (got \(offline))")
        }
        guard let credential = Credential.generate(kind: kind) else { throw ServiceError(.system, "no randomness available from getrandom(2)") }
        let record = CredentialRecord(id: credential.id, kind: kind, name: name, secretHash: credential.secretHash, users: users,
                                      groups: groups, offlineCodes: offline, created: now, revoked: 0, lastUsed: 0)
        return (record, credential)
    }

    /// The caller a presented credential proves, or nil (wrong kind, revoked, wrong secret).
    public static func caller(for record: CredentialRecord, presented: Credential, address: String) -> Caller? {
        guard record.kind == presented.kind, record.revoked == 0, presented.matches(storedHash: record.secretHash) else { return nil }
        return Caller(kind: record.kind == .host ? .host : .admin, name: record.name, address: address, users: record.users,
                      groups: record.groups, offlineCodes: record.offlineCodes, credentialHash: record.secretHash)
    }
}
