import SecurOTPCore
import SecurOTPStore

/// Bearer credentials for hosts, admins and push devices: `sotp_<h|a|d>_<id: 16 hex>_<secret: 64 hex>`.
/// The id finds the row; only a hash of the 256-bit secret is stored. A secret with full
/// entropy needs no slow hash: HMAC-SHA256 under a fixed domain key, compared in constant time.
public struct Credential: Sendable, Equatable {
    public let kind: CredentialKind
    public let id: String
    let secret: [UInt8]

    static let prefix = "sotp"

    /// A fresh credential, or nil when the kernel gives no randomness.
    public static func generate(kind: CredentialKind) -> Credential? {
        guard let id = SecretBytes.random(count: 8), let secret = SecretBytes.random(count: 32) else { return nil }
        return Credential(kind: kind, id: id.withUnsafeBytes { Hex.encode($0) }, secret: secret.withUnsafeBytes { Array($0) })
    }

    /// Parses the text form; nil for anything malformed (the caller answers "unauthorized").
    public init?(text: String) {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == Self.prefix,
              let kind: CredentialKind = parts[1] == "h" ? .host : parts[1] == "a" ? .admin : parts[1] == "d" ? .device : nil,
              parts[2].utf8.count == 16, parts[3].utf8.count == 64,
              let id = Hex.decode(String(parts[2])), id.count == 8,
              let secret = Hex.decode(String(parts[3])), secret.count == 32,
              Hex.encode(id) == parts[2], Hex.encode(secret) == parts[3] else { return nil }
        self.init(kind: kind, id: String(parts[2]), secret: secret)
    }

    init(kind: CredentialKind, id: String, secret: [UInt8]) {
        self.kind = kind
        self.id = id
        self.secret = secret
    }

    public var text: String {
        "\(Self.prefix)_\(kind == .host ? "h" : kind == .admin ? "a" : "d")_\(id)_\(Hex.encode(secret))"
    }

    /// What the store keeps.
    public var secretHash: [UInt8] { HostCredentialHash.of(secret: secret) }

    public func matches(storedHash: [UInt8]) -> Bool { ConstantTime.equal(secretHash, storedHash) }

    /// Reads a credential file (the host's `host_credential=`, the CLI's `--credential`):
    /// the credential on the first line; surrounding white space ignored.
    public static func parseFile(_ bytes: [UInt8]) -> Credential? {
        let line = bytes.prefix { $0 != 10 && $0 != 13 }
        let trimmed = line.drop { $0 == 32 || $0 == 9 }.reversed().drop { $0 == 32 || $0 == 9 }.reversed()
        return Credential(text: String(decoding: Array(trimmed), as: UTF8.self))
    }
}
