import COpenSSL

/// The HMAC hash of an OATH token (RFC 6238 allows SHA-1, SHA-256, SHA-512).
public enum HashAlgorithm: Sendable, CaseIterable {
    case sha1, sha256, sha512

    /// Spelling used in otpauth URIs, the CLI and the database.
    public var name: String {
        switch self {
        case .sha1: "SHA1"
        case .sha256: "SHA256"
        case .sha512: "SHA512"
        }
    }

    /// Accepts SHA1 / sha-256 / Sha512 and so on.
    public init?(name: String) {
        var folded = ""
        for character in name.uppercased() where character != "-" { folded.append(character) }
        switch folded {
        case "SHA1": self = .sha1
        case "SHA256": self = .sha256
        case "SHA512": self = .sha512
        default: return nil
        }
    }

    var cIdentifier: Int32 {
        switch self {
        case .sha1: Int32(SECUROTP_SHA1)
        case .sha256: Int32(SECUROTP_SHA256)
        case .sha512: Int32(SECUROTP_SHA512)
        }
    }
}

/// HMAC over libcrypto's digests.
public enum HMAC {
    public static func authenticate(_ algorithm: HashAlgorithm, key: SecretBytes,
                                    message: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: 64)
        defer { mac.withUnsafeMutableBytes { securotp_cleanse($0.baseAddress, $0.count) } }
        let length = key.withUnsafeBytes { keyBytes in
            mac.withUnsafeMutableBufferPointer { out in
                securotp_hmac(algorithm.cIdentifier, keyBytes.baseAddress, keyBytes.count,
                              message.baseAddress, message.count, out.baseAddress)
            }
        }
        return Array(mac.prefix(length))
    }

    public static func authenticate(_ algorithm: HashAlgorithm, key: SecretBytes, message: [UInt8]) -> [UInt8] {
        message.withUnsafeBufferPointer { authenticate(algorithm, key: key, message: $0) }
    }
}
