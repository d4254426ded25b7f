import SecurOTPCore

extension VerificationEngine {
    /// The PIN mode a token gets when a PIN is set or required: a token without one becomes
    /// fob style (PIN typed before the code).
    static func pinModeWithPIN(_ record: TokenRecord) -> PINMode { record.pinMode == .none ? .prefix : record.pinMode }

    /// Sets (or replaces) the PIN of `record`'s token and clears a pending PIN change: checks
    /// the PIN rules and makes the slow hash, the only thing stored.
    public static func setPIN(on record: TokenRecord, pin: UnsafeBufferPointer<UInt8>) throws(StoreError) -> StateWrite {
        let mode = pinModeWithPIN(record)
        if let problem = PINRules.problem(pin, mode: mode) { throw StoreError(.invalidInput, "PIN refused: \(problem)") }
        guard let hash = SlowHash.hash(pin) else { throw StoreError(.system, "no randomness available for the PIN salt") }
        return .setPIN(user: record.user, serial: record.serial, mode: mode, hash: hash, length: pin.count)
    }

    /// Removes a token's PIN: the passcode is the tokencode alone (PINPad tokens: PIN 0000).
    public static func clearPIN(on record: TokenRecord) -> StateWrite {
        .clearPIN(user: record.user, serial: record.serial)
    }

    /// The next login with this token must set a new PIN (new-PIN mode; forced change when
    /// one is set).
    public static func requirePIN(on record: TokenRecord) -> StateWrite {
        .requirePIN(user: record.user, serial: record.serial, mode: pinModeWithPIN(record))
    }
}
