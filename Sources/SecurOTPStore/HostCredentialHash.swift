import SecurOTPCore

/// What a validator stores of a credential's 256-bit secret: HMAC-SHA256 under a fixed domain
/// key (a secret with full entropy needs no slow hash). A host computes the same value from
/// its credential file: it keys the hashes of its offline codes, so a cache file is useless
/// without the credential.
public enum HostCredentialHash {
    static let domainKey = Array("securotp-credential-v1".utf8)

    public static func of(secret: [UInt8]) -> [UInt8] {
        secret.withUnsafeBufferPointer { of(secret: $0) }
    }

    public static func of(secret: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        HMAC.authenticate(.sha256, key: SecretBytes(copying: domainKey), message: secret)
    }
}
