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

extension Store {
    /// Replaces a user's recovery codes with `count` new ones, returned once (only hashes are kept).
    public func generateRecoveryCodes(user: String, count: Int, now: Int64) throws(StoreError) -> [String] {
        try Self.validate(user: user)
        guard RecoveryCodes.countRange.contains(count) else { throw StoreError(.invalidInput, "--count must be 1–20 (got \(count))") }
        return try db.immediateTransaction { () throws(StoreError) -> [String] in
            try db.prepare("DELETE FROM recovery_codes WHERE user = ?").bind(.text(user)).run()
            var codes: [String] = []
            var ids = Set<String>()
            while codes.count < count {
                guard let code = RecoveryCodes.random() else { throw StoreError(.system, "no randomness available") }
                let id = String(decoding: code.prefix(4), as: UTF8.self)
                guard ids.insert(id).inserted else { continue }
                guard let hash = code.withUnsafeBufferPointer({ SlowHash.hash($0) }) else { throw StoreError(.system, "no randomness available") }
                try db.prepare("INSERT INTO recovery_codes (user, id, hash, created) VALUES (?, ?, ?, ?)")
                    .bind(.text(user), .text(id), .blob(hash), .integer(now)).run()
                codes.append(String(decoding: code, as: UTF8.self))
            }
            return codes
        }
    }

    /// Unused recovery codes of a user.
    public func remainingRecoveryCodes(user: String) throws(StoreError) -> Int {
        let statement = try db.prepare("SELECT count(*) FROM recovery_codes WHERE user = ? AND used = 0")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step() ? Int(statement.integer(0)) : 0
    }

    /// Inside a verify transaction: marks the code used and returns how many remain, or nil.
    func spendRecoveryCode(user: String, input: UnsafeBufferPointer<UInt8>, now: Int64) throws(StoreError) -> Int? {
        let code = input.map(RecoveryCodes.lowercased)
        let id = String(decoding: code.prefix(4), as: UTF8.self)
        let lookup = try db.prepare("SELECT hash FROM recovery_codes WHERE user = ? AND id = ? AND used = 0")
        defer { lookup.reset() }
        try lookup.bind(.text(user), .text(id))
        guard try lookup.step() else { return nil }
        let hash = lookup.blob(0)
        lookup.reset()
        guard code.withUnsafeBufferPointer({ SlowHash.verify($0, against: hash) }) else { return nil }
        try db.prepare("UPDATE recovery_codes SET used = ? WHERE user = ? AND id = ? AND used = 0")
            .bind(.integer(now), .text(user), .text(id)).run()
        guard db.changes == 1 else { return nil }
        return try remainingRecoveryCodes(user: user)
    }
}
