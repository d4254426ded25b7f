import SecurOTPCore

/// The host's secrets, in one owner-only file (default /etc/securotp/securotp.key):
/// the data key that seals every seed (AES-256-GCM), and the host secret that binding IDs are
/// derived from. Layout: "SOK1" + 32-byte data key + 32-byte host secret.
public struct KeyFile {
    static let magic = Array("SOK1".utf8)
    static let size = 4 + 32 + 32

    public let dataKey: SecretBytes
    public let hostSecret: SecretBytes

    public static func load(_ path: String) throws(StoreError) -> KeyFile {
        var bytes = try FileSecurity.contents(of: path, .secret, maxSize: size)
        defer { for index in bytes.indices { bytes[index] = 0 } }
        guard bytes.count == size, Array(bytes.prefix(4)) == magic else {
            throw StoreError(.corrupt, "\(path) is not a securotp key file (expected \(size) bytes starting with SOK1); restore it from backup")
        }
        return KeyFile(dataKey: SecretBytes(copying: bytes[4..<36]), hostSecret: SecretBytes(copying: bytes[36..<68]))
    }

    /// Generates fresh keys and writes them; refuses to replace an existing key file, since
    /// that would make every sealed seed unreadable.
    public static func create(_ path: String) throws(StoreError) -> KeyFile {
        guard let dataKey = SecretBytes.random(count: 32), let hostSecret = SecretBytes.random(count: 32) else {
            throw StoreError(.system, "no randomness available from getrandom(2)")
        }
        let content = SecretBytes(count: size)
        content.withUnsafeMutableBytes { out in
            for index in 0..<4 { out[index] = magic[index] }
            dataKey.withUnsafeBytes { key in for index in 0..<32 { out[4 + index] = key[index] } }
            hostSecret.withUnsafeBytes { key in for index in 0..<32 { out[36 + index] = key[index] } }
        }
        try content.withUnsafeBytes { (bytes) throws(StoreError) in try FileSecurity.writeSecret(path, bytes: bytes, replace: false) }
        return KeyFile(dataKey: dataKey, hostSecret: hostSecret)
    }
}
