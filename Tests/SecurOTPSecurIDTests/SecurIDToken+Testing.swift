import SecurOTPCore
@testable import SecurOTPSecurID

/// Checks the tests make on tokens; nothing in the products needs them.
extension SecurIDToken {
    /// True when the seed, serial and parameters can produce codes.
    var isWellFormed: Bool {
        seed.count == SecurIDCrypto.blockSize && serialBCD() != nil && parameters.problem == nil
    }

    /// The inverse of `addPIN`: the tokencode inside a PINPad passcode, given the PIN. Written
    /// apart from `addPIN`, so that each checks the other: the PIN's digits are subtracted from
    /// the passcode's, both aligned on the right, each position modulo 10 without borrows.
    /// Empty if either holds a character other than an ASCII digit.
    static func subtractPIN(_ pin: [UInt8], from passcode: [UInt8]) -> [UInt8] {
        let digit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        guard passcode.allSatisfy(digit), pin.allSatisfy(digit) else { return [] }
        var out = passcode
        for (offset, pinDigit) in pin.reversed().enumerated() where offset < passcode.count {
            let index = passcode.count - 1 - offset
            let difference = (Int(passcode[index]) - Int(pinDigit) + 10) % 10
            out[index] = UInt8(ascii: "0") + UInt8(difference)
        }
        return out
    }
}
