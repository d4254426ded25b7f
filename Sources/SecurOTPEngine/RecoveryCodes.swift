import SecurOTPCore

/// Single-use recovery codes: `xxxx-xxxx-xxxx` from 31 unambiguous characters (about 59 bits).
/// The first group names the row, so a login checks one slow hash, not all of them.
public enum RecoveryCodes {
    static let alphabet = Array("abcdefghjkmnpqrstuvwxyz23456789".utf8)
    public static let countRange = 1...20

    /// Shape only: 14 characters, dashes after 4 and 9, the rest from the alphabet (any case).
    public static func looksLikeCode(_ input: UnsafeBufferPointer<UInt8>) -> Bool {
        guard input.count == 14 else { return false }
        for (index, byte) in input.enumerated() {
            if index == 4 || index == 9 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard alphabet.contains(lowercased(byte)) else { return false }
            }
        }
        return true
    }

    static func lowercased(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }

    /// The row name of a (lowercased) code: its first group.
    static func id(of code: [UInt8]) -> String { String(decoding: code.prefix(4), as: UTF8.self) }

    /// `count` new codes with distinct ids, each with its slow hash (the only thing to store).
    public static func generate(count: Int) throws(StoreError) -> [NewRecoveryCode] {
        guard countRange.contains(count) else { throw StoreError(.invalidInput, "--count must be 1–20 (got \(count))") }
        var codes: [NewRecoveryCode] = []
        while codes.count < count {
            guard let code = random() else { throw StoreError(.system, "no randomness available") }
            let id = id(of: code)
            guard !codes.contains(where: { $0.id == id }) else { continue }
            guard let hash = code.withUnsafeBufferPointer({ SlowHash.hash($0) }) else { throw StoreError(.system, "no randomness available") }
            codes.append(NewRecoveryCode(code: String(decoding: code, as: UTF8.self), id: id, hash: hash))
        }
        return codes
    }

    static func random() -> [UInt8]? {
        guard let entropy = SecretBytes.random(count: 12) else { return nil }
        var code: [UInt8] = []
        entropy.withUnsafeBytes { bytes in
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 8 { code.append(UInt8(ascii: "-")) }
                // 256 = 8·31 + 8: a negligible bias, no rejection loop needed for 59 bits.
                code.append(alphabet[Int(byte) % alphabet.count])
            }
        }
        return code
    }
}

/// A recovery code just generated: `code` is shown once; a backend stores `id` and `hash`
/// (unique per user and id) and never the code.
public struct NewRecoveryCode: Sendable {
    public let code: String
    public let id: String
    public let hash: [UInt8]
}
