import SecurOTPCore
import SecurOTPSecurID
import SecurOTPStore

extension AuthenticatorStore {
    /// The current and next code of a token at `now`, with the seconds the current one has
    /// left. HOTP shows the code for its counter and moves the counter on (on disk before the
    /// code is returned), as pressing a hardware token's button does; it has no "next".
    ///
    /// `pin` is for PINPad tokens (PIN mode `.addedByToken`): it is added into the codes digit
    /// by digit, as the token device would. nil shows the bare code.
    public func codes(serial: String, pin: [UInt8]?, now: Int64) throws(AuthenticatorError) -> ShownCodes {
        try translating { () throws(StoreError) -> ShownCodes in
            let token = try lookUp(serial)
            if token.kind == .hotp {
                return try db.immediateTransaction { () throws(StoreError) -> ShownCodes in
                    let fresh = try lookUp(serial) // re-read under the write lock: two runs never show one code
                    let codes = try Self.codes(fresh, seed: seed(serial: serial), pin: pin, now: now)
                    try db.prepare("UPDATE tokens SET counter = counter + 1 WHERE serial = ? AND counter = ?")
                        .bind(.text(serial), .integer(Int64(fresh.counter))).run()
                    guard db.changes == 1 else { throw StoreError(.database, "token \(serial) changed while its code was made; try again") }
                    return codes
                }
            }
            return try Self.codes(token, seed: seed(serial: serial), pin: pin, now: now)
        }
    }

    /// The codes of one token from its seed; no state changes.
    static func codes(_ token: StoredToken, seed: SecretBytes, pin: [UInt8]?, now: Int64) throws(StoreError) -> ShownCodes {
        if token.isExpired(at: now) {
            throw StoreError(.invalidInput, "token \(token.serial) expired on \(CalendarDate.text(token.expires)); ask its issuer for a new one")
        }
        try checkPIN(pin, for: token)
        func make(_ code: [UInt8]) throws(StoreError) -> String {
            var code = code
            defer { SecurIDCrypto.wipe(&code) }
            guard code.count == token.digits else {
                throw StoreError(.corrupt, "token \(token.serial) cannot make a code at this time (its seed or parameters are not usable)")
            }
            if let pin {
                var passcode = SecurIDToken.addPIN(pin, to: code)
                defer { SecurIDCrypto.wipe(&passcode) }
                return String(decoding: passcode, as: UTF8.self)
            }
            return String(decoding: code, as: UTF8.self)
        }
        switch token.kind {
        case .totp:
            let (later, overflow) = now.addingReportingOverflow(Int64(token.period))
            return ShownCodes(token: token,
                              current: try make(OTP.totp(secret: seed, unixTime: now, period: token.period, digits: token.digits, algorithm: token.algorithm)),
                              next: try make(overflow ? [] : OTP.totp(secret: seed, unixTime: later, period: token.period, digits: token.digits, algorithm: token.algorithm)),
                              secondsRemaining: OTP.secondsRemaining(unixTime: now, period: token.period), counter: nil, pinApplied: pin != nil)
        case .securid:
            let device = SecurIDToken(serial: token.serial, seed: seed,
                                      parameters: SecurIDParameters(digits: token.digits, interval: token.period, addsPIN: token.pinMode == .addedByToken))
            return ShownCodes(token: token, current: try make(device.tokencode(at: now)), next: try make(device.nextTokencode(at: now)),
                              secondsRemaining: device.secondsRemaining(at: now), counter: nil, pinApplied: pin != nil)
        case .hotp:
            return ShownCodes(token: token,
                              current: try make(OTP.hotp(secret: seed, counter: token.counter, digits: token.digits, algorithm: token.algorithm)),
                              next: nil, secondsRemaining: nil, counter: token.counter, pinApplied: pin != nil)
        }
    }

    /// PINs go only into PINPad tokens' codes: 4 to 8 digits, no longer than the code.
    /// Never part of a message.
    static func checkPIN(_ pin: [UInt8]?, for token: StoredToken) throws(StoreError) {
        guard let pin else { return }
        guard token.pinMode == .addedByToken else {
            let how = token.pinMode == .prefix ? "type your PIN in front of its code yourself" : "it takes no PIN"
            throw StoreError(.invalidInput, "token \(token.serial) does not add a PIN into its code (\(how))")
        }
        guard (4...8).contains(pin.count), pin.allSatisfy({ (48...57).contains($0) }) else {
            throw StoreError(.invalidInput, "a PIN for token \(token.serial) has 4 to 8 digits")
        }
        guard pin.count <= token.digits else {
            throw StoreError(.invalidInput, "a PIN for token \(token.serial) has at most \(token.digits) digits, as many as its code")
        }
    }
}
