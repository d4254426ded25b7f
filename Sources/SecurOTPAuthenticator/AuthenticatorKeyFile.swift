import SecurOTPCore

/// The random half of the store's keys, in DIR/authenticator.key: "SOA1" + 32 random bytes.
/// On its own it opens nothing: the keys are derived from it, the machine ID and the uid
/// (DeviceKeys), so the file copied together with the database is not enough elsewhere.
struct AuthenticatorKeyFile {
    static let magic = Array("SOA1".utf8)
    static let size = 4 + 32

    let secret: SecretBytes

    static func load(_ path: String) throws(AuthenticatorError) -> AuthenticatorKeyFile {
        var bytes = try PrivateFiles.contents(of: path, maxSize: size)
        defer { for index in bytes.indices { bytes[index] = 0 } }
        guard bytes.count == size, Array(bytes.prefix(4)) == magic else {
            throw AuthenticatorError(.corrupt, "\(path) is not an authenticator key file (expected \(size) bytes starting with SOA1); "
                + "without it the tokens cannot be opened: restore it from a backup, or start over with: securotp-authenticator reset")
        }
        return AuthenticatorKeyFile(secret: SecretBytes(copying: bytes[4...]))
    }

    /// A fresh random secret, written atomically; `replace` only for reset.
    static func create(_ path: String, replace: Bool) throws(AuthenticatorError) -> AuthenticatorKeyFile {
        guard let secret = SecretBytes.random(count: 32) else { throw AuthenticatorError(.system, "no randomness available from getrandom(2)") }
        let content = SecretBytes(count: size)
        content.withUnsafeMutableBytes { out in
            for index in 0..<4 { out[index] = magic[index] }
            secret.withUnsafeBytes { key in for index in 0..<32 { out[4 + index] = key[index] } }
        }
        try PrivateFiles.write(path, content, replace: replace)
        return AuthenticatorKeyFile(secret: secret)
    }
}
