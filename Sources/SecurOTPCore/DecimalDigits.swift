/// The low `count` decimal digits of `value`, zero-padded, as ASCII: how HOTP/TOTP (RFC 4226
/// §5.3), OCRA, SecurID tokencodes and offline challenges turn a number into the code a person
/// types. `count` outside 1...20 gives no digits (UInt64 has at most 20).
public enum DecimalDigits {
    public static func low(_ value: UInt64, count: Int) -> [UInt8] {
        guard (1...20).contains(count) else { return [] }
        var remaining = value
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: count)
        var position = count - 1
        while position >= 0 {
            digits[position] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remaining % 10)
            remaining /= 10
            position -= 1
        }
        return digits
    }
}
