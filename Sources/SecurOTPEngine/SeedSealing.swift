import COpenSSL
import SecurOTPCore

/// AES-256-GCM sealing of token seeds under the key file's data key (`KeyFile.dataKey`); the
/// user-side authenticator seals its seeds the same way under its own key. The associated
/// data names the owner and serial, so a sealed seed copied to another user's row (or another
/// serial) fails to open.
/// Sealed layout: 12-byte random nonce + ciphertext + 16-byte tag.
public enum SeedSealing {
    public static func associatedData(user: String, serial: String) -> [UInt8] {
        Array("securotp-seed-v1".utf8) + [0] + Array(user.utf8) + [0] + Array(serial.utf8)
    }

    public static func seal(_ seed: SecretBytes, key: SecretBytes, user: String, serial: String) throws(StoreError) -> [UInt8] {
        guard let nonce = SecretBytes.random(count: 12) else { throw StoreError(.system, "no randomness available") }
        let aad = associatedData(user: user, serial: serial)
        var sealed = [UInt8](repeating: 0, count: 12 + seed.count + 16)
        let ok = sealed.withUnsafeMutableBufferPointer { out -> Int32 in
            guard let base = out.baseAddress else { return 0 }
            nonce.withUnsafeBytes { n in for index in 0..<12 { base[index] = n[index] } }
            return key.withUnsafeBytes { k in
                seed.withUnsafeBytes { plain in
                    securotp_aes256gcm_seal(k.baseAddress, base, aad, aad.count, plain.baseAddress, plain.count,
                                            base + 12, base + 12 + plain.count)
                }
            }
        }
        guard ok == 1 else { throw StoreError(.system, "sealing a seed failed") }
        return sealed
    }

    /// Nil when the blob was altered, moved to another row, or sealed under another key.
    public static func open(_ sealed: [UInt8], key: SecretBytes, user: String, serial: String) -> SecretBytes? {
        guard sealed.count > 12 + 16 else { return nil }
        let aad = associatedData(user: user, serial: serial)
        let seed = SecretBytes(count: sealed.count - 28)
        let ok = sealed.withUnsafeBufferPointer { input -> Int32 in
            guard let base = input.baseAddress else { return 0 }
            return key.withUnsafeBytes { k in
                seed.withUnsafeMutableBytes { plain in
                    securotp_aes256gcm_open(k.baseAddress, base, aad, aad.count, base + 12, plain.count,
                                            base + 12 + plain.count, plain.baseAddress)
                }
            }
        }
        return ok == 1 ? seed : nil
    }
}
