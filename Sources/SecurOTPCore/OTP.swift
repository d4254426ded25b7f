/// HOTP (RFC 4226) and TOTP (RFC 6238).
public enum OTP {
    public static let digitRange = 6...8
    public static let periodRange = 1...300

    /// The code for one counter value as ASCII digits (left-padded with zeros).
    public static func hotp(secret: SecretBytes, counter: UInt64, digits: Int, algorithm: HashAlgorithm) -> [UInt8] {
        var message = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { message[index] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(index))) }
        var mac = HMAC.authenticate(algorithm, key: secret, message: message)
        defer { for index in mac.indices { mac[index] = 0 } }
        // Dynamic truncation (RFC 4226 §5.3); the offset nibble addresses at most byte 15+3.
        guard let last = mac.last, mac.count >= 20 else { return [] }
        let offset = Int(last & 0x0f)
        var binary: UInt32 = 0
        for index in offset..<(offset + 4) { binary = binary << 8 | UInt32(mac[index]) }
        binary &= 0x7fff_ffff
        let clampedDigits = min(max(digits, digitRange.lowerBound), digitRange.upperBound)
        return DecimalDigits.low(UInt64(binary), count: clampedDigits)
    }

    /// The TOTP time step containing `unixTime` (T = floor((time - T0) / X)); nil before T0.
    public static func timeStep(unixTime: Int64, period: Int, t0: Int64 = 0) -> UInt64? {
        guard period > 0, unixTime >= t0 else { return nil }
        return UInt64((unixTime - t0) / Int64(period))
    }

    public static func totp(secret: SecretBytes, unixTime: Int64, period: Int, t0: Int64 = 0,
                            digits: Int, algorithm: HashAlgorithm) -> [UInt8] {
        guard let step = timeStep(unixTime: unixTime, period: period, t0: t0) else { return [] }
        return hotp(secret: secret, counter: step, digits: digits, algorithm: algorithm)
    }

    /// Seconds until the code for `unixTime` changes.
    public static func secondsRemaining(unixTime: Int64, period: Int, t0: Int64 = 0) -> Int {
        guard period > 0 else { return 0 }
        let into = Int((unixTime - t0) % Int64(period))
        return period - (into < 0 ? into + period : into)
    }
}
