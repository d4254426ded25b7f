/// The signature-counter rule for every device and key (WebAuthn §6.1.1), one meaning for
/// push approvals, phone passkeys and FIDO keys alike: a device that keeps no counter sends 0
/// every time, and 0 after 0 is accepted; once either side is non-zero the received counter
/// must be above the stored one, else the device may have been cloned and is refused.
public enum SignatureCounter {
    public static func accepts(received: UInt32, stored: UInt32) -> Bool {
        (received == 0 && stored == 0) || received > stored
    }

    /// Stores keep the counter in a signed 64-bit column; anything outside 0...UInt32.max is
    /// corrupt, and is read as the largest counter, which nothing can follow.
    public static func stored(_ column: Int64) -> UInt32 { UInt32(exactly: column) ?? .max }

    /// The audit detail of a refused counter, for every method.
    public static let notAdvancedDetail = "signature counter did not advance (cloned device?)"
}
