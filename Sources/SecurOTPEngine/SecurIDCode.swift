import SecurOTPCore
import SecurOTPSecurID

/// SecurID tokencodes for the verification engine, from the stored seed and serial.
enum SecurIDCode {
    static func tokencode(seed: SecretBytes, serial: String, digits: Int, interval: Int, unixTime: Int64) -> [UInt8] {
        let parameters = SecurIDParameters(digits: digits, interval: interval, addsPIN: false)
        return SecurIDToken(serial: serial, seed: seed, parameters: parameters).tokencode(at: unixTime)
    }
}
