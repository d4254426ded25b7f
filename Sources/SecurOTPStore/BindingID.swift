import SecurOTPCore

/// SecurID-style device binding: 24 lowercase hex characters derived from this host's secret
/// and a Unix user name. Stable for a host and user; unrelated across users and hosts.
public enum BindingID {
    public static func derive(hostSecret: SecretBytes, user: String) -> String {
        let message = Array("securotp-binding-id-v1".utf8) + [0] + Array(user.utf8)
        let mac = HMAC.authenticate(.sha256, key: hostSecret, message: message)
        return Hex.encode(mac.prefix(12))
    }
}
