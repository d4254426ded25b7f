import SecurOTPCore
import SecurOTPStore

/// The keys of one store for one user on one machine. A device key is HMAC-SHA256 under the
/// key file's secret over the machine ID and the uid; the data key that seals the seeds and the
/// binding ID come from it. The same directory under another uid or machine ID derives other
/// keys, so its seeds do not open there.
struct DeviceKeys {
    let dataKey: SecretBytes
    /// 24 lowercase hex digits; what issuers bind SecurID tokens to (BindingID).
    let bindingID: String
    /// Names the machine that made a store without revealing its ID; only for error messages
    /// (the key check decides).
    let machineTag: String

    init(secret: SecretBytes, identity: DeviceIdentity) {
        let context = Array("securotp-authenticator-device-v1".utf8) + [0] + Array(identity.machineID.utf8) + [0] + Array(String(identity.uid).utf8)
        let deviceKey = Self.derive(secret, context)
        dataKey = Self.derive(deviceKey, Array("securotp-authenticator-data-key-v1".utf8))
        bindingID = BindingID.derive(hostSecret: deviceKey, user: String(identity.uid))
        // Keyed by the machine ID, not the key file, so a replaced key file is told apart from
        // another machine; an app-specific hash, as machine-id(5) asks, not the ID itself.
        let machineKey = SecretBytes(copying: Array(identity.machineID.utf8))
        machineTag = Hex.encode(HMAC.authenticate(.sha256, key: machineKey, message: Array("securotp-authenticator-machine-v1".utf8)).prefix(8))
    }

    /// HMAC-SHA256(key, message) in a wiped buffer.
    private static func derive(_ key: SecretBytes, _ message: [UInt8]) -> SecretBytes {
        var mac = HMAC.authenticate(.sha256, key: key, message: message)
        defer { for index in mac.indices { mac[index] = 0 } }
        return SecretBytes(copying: mac)
    }
}
