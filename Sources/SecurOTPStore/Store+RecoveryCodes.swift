extension Store {
    /// Replaces a user's recovery codes with `count` new ones, returned once (only hashes are kept).
    public func generateRecoveryCodes(user: String, count: Int, now: Int64) throws(StoreError) -> [String] {
        try InputRules.validate(user: user)
        let codes = try RecoveryCodes.generate(count: count)
        try db.immediateTransaction { () throws(StoreError) in
            try db.prepare("DELETE FROM recovery_codes WHERE user = ?").bind(.text(user)).run()
            for code in codes {
                try db.prepare("INSERT INTO recovery_codes (user, id, hash, created) VALUES (?, ?, ?, ?)")
                    .bind(.text(user), .text(code.id), .blob(code.hash), .integer(now)).run()
            }
        }
        return codes.map { $0.code }
    }

    /// Unused recovery codes of a user.
    public func remainingRecoveryCodes(user: String) throws(StoreError) -> Int {
        let statement = try db.prepare("SELECT count(*) FROM recovery_codes WHERE user = ? AND used = 0")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step() ? Int(statement.integer(0)) : 0
    }
}
