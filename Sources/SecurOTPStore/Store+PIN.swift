import SecurOTPCore

/// PIN rules (SecurID's): 4–8 characters, no spaces; digits only where the token adds the PIN
/// into its code; stored only as a slow salted hash.
public enum PINRules {
    public static let lengths = 4...8

    /// Nil when `pin` is acceptable for `mode`, else what is wrong (never echoes the PIN).
    public static func problem(_ pin: UnsafeBufferPointer<UInt8>, mode: PINMode) -> String? {
        guard lengths.contains(pin.count) else { return "a PIN has 4 to 8 characters" }
        if mode == .addedByToken {
            guard pin.allSatisfy({ (48...57).contains($0) }) else { return "this token adds the PIN into its code: use digits only" }
        } else {
            guard pin.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) else {
                return "use letters and digits only (no spaces)"
            }
        }
        return nil
    }
}

extension Store {
    /// Sets (or replaces) a token's PIN and clears a pending PIN change.
    public func setPIN(user: String, serial: String, pin: UnsafeBufferPointer<UInt8>) throws(StoreError) {
        let record = try token(user: user, serial: serial)
        let mode = record.pinMode == .none ? PINMode.prefix : record.pinMode
        if let problem = PINRules.problem(pin, mode: mode) { throw StoreError(.invalidInput, "PIN refused: \(problem)") }
        guard let hash = SlowHash.hash(pin) else { throw StoreError(.system, "no randomness available for the PIN salt") }
        try db.prepare("UPDATE tokens SET pin_mode = ?, pin_hash = ?, pin_length = ?, pin_change_required = 0 WHERE user = ? AND serial = ?")
            .bind(.text(mode.rawValue), .blob(hash), .integer(Int64(pin.count)), .text(user), .text(serial)).run()
    }

    /// Removes a token's PIN: the passcode is the tokencode alone (PINPad tokens: PIN 0000).
    public func clearPIN(user: String, serial: String) throws(StoreError) {
        _ = try token(user: user, serial: serial)
        try db.prepare("UPDATE tokens SET pin_mode = 'none', pin_hash = NULL, pin_length = 0, pin_change_required = 0 WHERE user = ? AND serial = ?")
            .bind(.text(user), .text(serial)).run()
    }

    /// The next login with this token must set a new PIN (new-PIN mode; forced change when
    /// one is set). A token without a PIN mode becomes fob style (PIN typed before the code).
    public func requirePIN(user: String, serial: String) throws(StoreError) {
        let record = try token(user: user, serial: serial)
        let mode = record.pinMode == .none ? PINMode.prefix : record.pinMode
        try db.prepare("UPDATE tokens SET pin_mode = ?, pin_change_required = 1 WHERE user = ? AND serial = ?")
            .bind(.text(mode.rawValue), .text(user), .text(serial)).run()
    }

    /// One token of a user, or notFound.
    public func token(user: String, serial: String) throws(StoreError) -> TokenRecord {
        guard let record = try tokens(user: user).first(where: { $0.serial == serial }) else {
            throw StoreError.noSuchToken(user: user, serial: serial)
        }
        return record
    }
}
