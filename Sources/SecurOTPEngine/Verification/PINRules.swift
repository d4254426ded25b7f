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
