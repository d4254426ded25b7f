extension Store {
    /// Sets (or replaces) a token's PIN and clears a pending PIN change.
    public func setPIN(user: String, serial: String, pin: UnsafeBufferPointer<UInt8>) throws(StoreError) {
        try apply(VerificationEngine.setPIN(on: try token(user: user, serial: serial), pin: pin))
    }

    /// Removes a token's PIN: the passcode is the tokencode alone (PINPad tokens: PIN 0000).
    public func clearPIN(user: String, serial: String) throws(StoreError) {
        try apply(VerificationEngine.clearPIN(on: try token(user: user, serial: serial)))
    }

    /// The next login with this token must set a new PIN (new-PIN mode; forced change when
    /// one is set). A token without a PIN mode becomes fob style (PIN typed before the code).
    public func requirePIN(user: String, serial: String) throws(StoreError) {
        try apply(VerificationEngine.requirePIN(on: try token(user: user, serial: serial)))
    }

    /// One token of a user, or notFound.
    public func token(user: String, serial: String) throws(StoreError) -> TokenRecord {
        guard let record = try tokens(user: user).first(where: { $0.serial == serial }) else {
            throw StoreError.noSuchToken(user: user, serial: serial)
        }
        return record
    }
}
