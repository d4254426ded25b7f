import SecurOTPCore

/// Token serial numbers: an issuer's (checked for shape) or a fresh random one. Whether a
/// serial is free is the backend's question (serials are unique across all users).
public enum TokenSerial {
    /// An issuer's serial: 1–64 printable characters.
    public static func check(_ serial: String) throws(StoreError) {
        guard !serial.isEmpty, serial.utf8.count <= 64, !serial.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7f }) else {
            throw StoreError(.invalidInput, "token serial \"\(serial)\" is not usable (1–64 printable characters)")
        }
    }

    /// 10 random decimal digits, not starting with 0; nil when the kernel gives no randomness.
    public static func random() -> String? {
        guard let random = SecretBytes.random(count: 8) else { return nil }
        let value = random.withUnsafeBytes { bytes in bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        return String(1_000_000_000 + value % 9_000_000_000)
    }

    /// Serials for credentials added together (one pam_u2f line), ascending: added with one
    /// `created`, they are read back (`ORDER BY created, serial`) in the order given — a login
    /// tries them, and `max_devices` counts them, in the line's order. Random serials are 10
    /// digits, so byte order, numeric order and any collation's order agree.
    public static func ascending(_ serials: [String]) -> [String] {
        serials.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
