import COpenSSL

/// The one form of public key every ES256 check takes (push devices, browser passkeys, FIDO
/// keys): the 91-byte DER SubjectPublicKeyInfo of a P-256 key with an uncompressed point.
/// COpenSSL's securotp_es256_verify reads it by this same fixed prefix (no OpenSSL decoders).
public enum P256PublicKey {
    /// SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING 0x00 0x04 … }.
    public static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
        0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ]

    /// Whether `key` has that form; the point itself is checked by each verification.
    public static func isSPKI(_ key: [UInt8]) -> Bool {
        key.count == Int(SECUROTP_P256_SPKI_LENGTH) && key.count > spkiPrefix.count && Array(key[..<spkiPrefix.count]) == spkiPrefix
    }

    /// The SPKI of a raw point x ‖ y (64 bytes, as COSE keys and pam_u2f lines carry it).
    public static func spki(point: [UInt8]) -> [UInt8] { spkiPrefix + point }
}
