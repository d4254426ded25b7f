import SecurOTPCore

extension Store {
    /// Applies the engine's writes inside the caller's transaction, each as the conditional
    /// update StateWrite describes; the first that changes no row throws its conflict, and
    /// the transaction rolls back.
    public func apply(_ writes: [StateWrite]) throws(StoreError) {
        for write in writes { try apply(write) }
    }

    func apply(_ write: StateWrite) throws(StoreError) {
        switch write {
        case .advanceStep(let serial, let from, let to, let drift, let lastUsed):
            // Compare-and-swap on the value the snapshot held: the step only moves forward, once.
            try db.prepare("UPDATE tokens SET last_step = ?1, last_used = ?2, drift = ?3 WHERE serial = ?4 AND last_step = ?5 AND ?1 > ?5")
                .bind(.integer(to), .integer(lastUsed), .integer(drift), .text(serial), .integer(from)).run()
        case .advanceCounter(let serial, let from, let to, let lastUsed):
            try db.prepare("UPDATE tokens SET counter = ?1, last_used = ?2 WHERE serial = ?3 AND counter = ?4 AND ?1 > ?4")
                .bind(.integer(to), .integer(lastUsed), .text(serial), .integer(from)).run()
        case .markUsed(let serial, let lastUsed):
            try db.prepare("UPDATE tokens SET last_used = ? WHERE serial = ?").bind(.integer(lastUsed), .text(serial)).run()
        case .spendRecoveryCode(let user, let id, let usedAt):
            try db.prepare("UPDATE recovery_codes SET used = ? WHERE user = ? AND id = ? AND used = 0")
                .bind(.integer(usedAt), .text(user), .text(id)).run()
        case .setFailures(let key, let expected, let to, let at):
            if expected == .clear {
                try db.prepare("""
                    INSERT INTO users (name, failures, locked_until, last_failure) VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT(name) DO UPDATE SET failures = ?2, locked_until = ?3, last_failure = ?4
                    WHERE users.failures = 0 AND users.locked_until = 0
                    """).bind(.text(key), .integer(Int64(to.failures)), .integer(to.lockedUntil), .integer(at)).run()
            } else {
                try db.prepare("""
                    UPDATE users SET failures = ?2, locked_until = ?3, last_failure = ?4
                    WHERE name = ?1 AND failures = ?5 AND locked_until = ?6
                    """).bind(.text(key), .integer(Int64(to.failures)), .integer(to.lockedUntil), .integer(at),
                              .integer(Int64(expected.failures)), .integer(expected.lockedUntil)).run()
            }
        case .clearFailures(let key, let expected):
            try db.prepare("DELETE FROM users WHERE name = ? AND failures = ? AND locked_until = ?")
                .bind(.text(key), .integer(Int64(expected.failures)), .integer(expected.lockedUntil)).run()
        case .setPIN(let user, let serial, let mode, let hash, let length):
            try db.prepare("UPDATE tokens SET pin_mode = ?, pin_hash = ?, pin_length = ?, pin_change_required = 0 WHERE user = ? AND serial = ?")
                .bind(.text(mode.rawValue), .blob(hash), .integer(Int64(length)), .text(user), .text(serial)).run()
        case .clearPIN(let user, let serial):
            try db.prepare("UPDATE tokens SET pin_mode = 'none', pin_hash = NULL, pin_length = 0, pin_change_required = 0 WHERE user = ? AND serial = ?")
                .bind(.text(user), .text(serial)).run()
        case .requirePIN(let user, let serial, let mode):
            try db.prepare("UPDATE tokens SET pin_mode = ?, pin_change_required = 1 WHERE user = ? AND serial = ?")
                .bind(.text(mode.rawValue), .text(user), .text(serial)).run()
        }
        guard db.changes == 1 else { throw write.conflict }
    }
}
