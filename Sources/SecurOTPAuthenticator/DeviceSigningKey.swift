import COpenSSLImport
import SecurOTPCore

/// The device's P-256 key pair for push approval (docs/push.md). Made and used through
/// OpenSSL's EVP interface (COpenSSLImport; the PAM module never links it): the private key
/// exists as PKCS#8 PEM in wiped buffers only, sealed in the store between uses.
public enum DeviceSigningKey {
    /// A fresh key pair: the private key (PEM, in a buffer wiped when released) and the public
    /// key as the 91-byte SubjectPublicKeyInfo DER the validator and hosts check with.
    public static func generate() throws(AuthenticatorError) -> (privateKey: SecretBytes, publicKey: [UInt8]) {
        let pem = SecretBytes(count: 512)
        var spki = [UInt8](repeating: 0, count: 128)
        var spkiLength = 0
        let ok = pem.withUnsafeMutableBytes { buffer in
            spki.withUnsafeMutableBufferPointer { out in
                buffer.withMemoryRebound(to: CChar.self) { text in
                    securotp_p256_generate(text.baseAddress, text.count, out.baseAddress, out.count, &spkiLength)
                }
            }
        }
        guard ok == 1, spkiLength == 91 else { throw AuthenticatorError(.system, "OpenSSL could not make a P-256 key pair") }
        let length = pem.withUnsafeBytes { bytes in bytes.firstIndex(of: 0) ?? bytes.count }
        let privateKey = pem.withUnsafeBytes { SecretBytes(copying: $0.prefix(length)) }
        return (privateKey, Array(spki.prefix(spkiLength)))
    }

    /// ES256 over SHA-256(message): the DER signature.
    public static func sign(_ message: [UInt8], privateKey: SecretBytes) throws(AuthenticatorError) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: 80)
        let length = privateKey.withUnsafeBytes { key in
            key.withMemoryRebound(to: CChar.self) { pem in
                message.withUnsafeBufferPointer { text in
                    signature.withUnsafeMutableBufferPointer { out in
                        securotp_es256_sign_pem(pem.baseAddress, pem.count, text.baseAddress, text.count, out.baseAddress, out.count)
                    }
                }
            }
        }
        guard length > 0, length <= signature.count else {
            throw AuthenticatorError(.corrupt, "the device's private key does not sign (it was damaged); remove the device (securotp-authenticator remove) and activate it again")
        }
        return Array(signature.prefix(length))
    }
}
