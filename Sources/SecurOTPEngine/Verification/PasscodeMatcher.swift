import SecurOTPCore

/// Compares what the user typed with a token's codes under its PIN mode. PINs are known only
/// as slow salted hashes, so a PIN is checked after the tokencode part matched (fob style) or
/// for each candidate code whose difference could be the PIN (PINPad style).
struct PasscodeMatcher {
    enum Found: Equatable {
        case match(position: Int64)
        /// The tokencode matched but the PIN in front of it did not.
        case wrongPIN
        case none
    }

    let mode: PINMode
    let pinHash: [UInt8]
    let pinLength: Int
    let passcode: UnsafeBufferPointer<UInt8>

    /// An empty code — one that could not be computed, such as the "next code" of a
    /// challenge-response token — never matches: otherwise an empty answer, or a PIN alone in
    /// front of nothing, would pass (found by fuzz/harnesses/passcode.swift).
    func find(in codes: some Sequence<(position: Int64, code: [UInt8])>) -> Found {
        var wrongPIN = false
        for (position, code) in codes where !code.isEmpty {
            switch mode {
            case .none:
                if code.withUnsafeBufferPointer({ ConstantTime.equal($0, passcode) }) { return .match(position: position) }
            case .prefix:
                guard passcode.count > code.count else { continue }
                let split = passcode.count - code.count
                let tail = UnsafeBufferPointer(rebasing: passcode[split...])
                guard code.withUnsafeBufferPointer({ ConstantTime.equal($0, tail) }) else { continue }
                if pinMatches(UnsafeBufferPointer(rebasing: passcode[..<split])) { return .match(position: position) }
                wrongPIN = true
            case .addedByToken:
                guard let pin = pinAddedInto(code), pin.withUnsafeBufferPointer({ pinMatches($0) }) else { continue }
                return .match(position: position)
            }
        }
        return wrongPIN ? .wrongPIN : .none
    }

    /// passcode − code, digit by digit modulo 10: the PIN right-aligned, zeros in front of it.
    private func pinAddedInto(_ code: [UInt8]) -> [UInt8]? {
        guard passcode.count == code.count, pinLength > 0, pinLength <= code.count else { return nil }
        var difference = [UInt8](repeating: 0, count: code.count)
        for index in 0..<code.count {
            let typed = passcode[index], shown = code[index]
            guard (48...57).contains(typed), (48...57).contains(shown) else { return nil }
            difference[index] = 48 + (typed - 48 + 10 - (shown - 48)) % 10
        }
        let lead = code.count - pinLength
        guard difference.prefix(lead).allSatisfy({ $0 == 48 }) else { return nil }
        return Array(difference.suffix(pinLength))
    }

    /// Only what PINRules would have let `setPIN` store can be the PIN. Checking that first also
    /// closes HMAC's key padding: PBKDF2 derives the same hash from "1234" and "1234\0\0"
    /// (found by fuzz/harnesses/passcode.swift), and saves a slow hash on junk.
    private func pinMatches(_ pin: UnsafeBufferPointer<UInt8>) -> Bool {
        !pinHash.isEmpty && PINRules.problem(pin, mode: mode) == nil && SlowHash.verify(pin, against: pinHash)
    }
}
