import SecurOTPCore

/// An RSA SecurID 128-bit time-based software token: 12-digit serial, 16-byte AES seed and the
/// parameters that shape its codes (research: securid-formats.md §2).
///
/// Codes are ASCII digit arrays. Every function returns an empty array instead of trapping
/// when the token or an input is not well formed (wrong seed length, non-digit serial or PIN,
/// unsupported digits or interval), so a caller comparing codes fails closed.
public struct SecurIDToken {
    /// 12 ASCII decimal digits; shorter all-digit serials are treated as left-padded with 0.
    public var serial: String
    /// The 16-byte AES-128 seed.
    public var seed: SecretBytes
    public var parameters: SecurIDParameters

    public init(serial: String, seed: SecretBytes, parameters: SecurIDParameters) {
        self.serial = serial
        self.seed = seed
        self.parameters = parameters
    }

    /// The tokencode shown at `unixTime` (without any PIN), `parameters.digits` ASCII digits.
    public func tokencode(at unixTime: Int64) -> [UInt8] {
        guard parameters.problem == nil else { return [] }
        var outputs = chainOutput(at: unixTime)
        defer { for index in outputs.indices { SecurIDCrypto.wipe(&outputs[index]) } }
        guard let block = outputs.last, block.count == SecurIDCrypto.blockSize else { return [] }

        let time = UTCTime(unixTime)
        let slot: Int
        if parameters.interval == 60 {
            slot = time.minute % 4
        } else {
            slot = 2 * (time.minute % 2) + (time.second >= 30 ? 1 : 0)
        }
        var word: UInt32 = 0
        for index in (4 * slot)..<(4 * slot + 4) { word = word << 8 | UInt32(block[index]) }
        return Self.decimal(word, digits: parameters.digits)
    }

    /// The code after the current one: the tokencode at `unixTime + interval` (stoken's
    /// `--next`), asked for by a server that wants to resynchronise.
    public func nextTokencode(at unixTime: Int64) -> [UInt8] {
        let (later, overflow) = unixTime.addingReportingOverflow(Int64(parameters.interval))
        return overflow ? [] : tokencode(at: later)
    }

    /// What the user submits at `unixTime` with `pin`: for AddPIN tokens the tokencode with
    /// the PIN added digit by digit; otherwise the PIN followed by the tokencode (fob style).
    /// An empty PIN gives the plain tokencode.
    public func passcode(at unixTime: Int64, pin: [UInt8]) -> [UInt8] {
        let code = tokencode(at: unixTime)
        guard !code.isEmpty, pin.allSatisfy(Self.isDigit) else { return [] }
        return parameters.addsPIN ? Self.addPIN(pin, to: code) : pin + code
    }

    /// Seconds until the code shown at `unixTime` changes.
    public func secondsRemaining(at unixTime: Int64) -> Int {
        let interval = Int64(parameters.interval == 60 ? 60 : 30)
        let into = unixTime % interval
        return Int(interval - (into < 0 ? into + interval : into))
    }

    /// PINPad style (AddPIN): adds the PIN's digits to the code's digits, both aligned on the
    /// right, each position modulo 10 without carries. A PIN longer than the code contributes
    /// only its last digits; PIN `0000` leaves the code unchanged. Empty if either holds a
    /// character other than an ASCII digit.
    public static func addPIN(_ pin: [UInt8], to code: [UInt8]) -> [UInt8] {
        combine(pin, code, sign: 1)
    }

    // MARK: - Internals (internal for tests)

    /// The five AES outputs of the key chain for `unixTime` (§2 step 5); the last one holds
    /// the four candidate codes. Empty if the token is not well formed. Caller wipes.
    func chainOutput(at unixTime: Int64) -> [[UInt8]] {
        guard seed.count == SecurIDCrypto.blockSize, var serialBytes = serialBCD() else { return [] }
        defer { SecurIDCrypto.wipe(&serialBytes) }
        let time = UTCTime(unixTime)
        let roundedMinute = time.minute - time.minute % (parameters.interval == 60 ? 4 : 2)
        let bcdTime: [UInt8] = [
            Self.bcd(time.year / 100), Self.bcd(time.year % 100), Self.bcd(time.month),
            Self.bcd(time.day), Self.bcd(time.hour), Self.bcd(roundedMinute), 0, 0,
        ]

        var key = seed.withUnsafeBytes { Array($0) }
        var block = [UInt8](repeating: 0, count: SecurIDCrypto.blockSize)
        var outputs: [[UInt8]] = []
        defer {
            SecurIDCrypto.wipe(&key)
            SecurIDCrypto.wipe(&block)
        }
        for used in [2, 3, 4, 5, 8] {
            for index in 0..<8 { block[index] = index < used ? bcdTime[index] : 0xAA }
            for index in 0..<4 { block[8 + index] = serialBytes[index] }
            for index in 12..<16 { block[index] = 0xBB }
            var output = [UInt8](repeating: 0, count: SecurIDCrypto.blockSize)
            guard SecurIDCrypto.aesBlock(encrypt: true, key: key, block, into: &output) else {
                for index in outputs.indices { SecurIDCrypto.wipe(&outputs[index]) }
                return []
            }
            // Each output is the next key; copied byte by byte so no buffer is shared.
            for index in 0..<SecurIDCrypto.blockSize { key[index] = output[index] }
            outputs.append(output)
        }
        return outputs
    }

    /// The last eight serial digits as four BCD bytes; nil unless the serial is 1–12 ASCII
    /// digits (shorter ones count as left-padded with zeros).
    func serialBCD() -> [UInt8]? {
        let digits = Array(serial.utf8)
        guard (1...12).contains(digits.count), digits.allSatisfy(Self.isDigit) else { return nil }
        let padded = [UInt8](repeating: UInt8(ascii: "0"), count: 12 - digits.count) + digits
        var out = [UInt8](repeating: 0, count: 4)
        for index in 0..<4 {
            let high = padded[4 + 2 * index] - UInt8(ascii: "0")
            let low = padded[5 + 2 * index] - UInt8(ascii: "0")
            out[index] = high << 4 | low
        }
        return out
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Two decimal digits 00–99 as one BCD byte (callers pass values in range).
    static func bcd(_ value: Int) -> UInt8 {
        let clamped = min(max(value, 0), 99)
        return UInt8(clamped / 10) << 4 | UInt8(clamped % 10)
    }

    /// `value mod 10^digits` as exactly `digits` ASCII digits (1...8).
    static func decimal(_ value: UInt32, digits: Int) -> [UInt8] {
        guard (1...8).contains(digits) else { return [] }
        return DecimalDigits.low(UInt64(value), count: digits)
    }

    private static func combine(_ pin: [UInt8], _ code: [UInt8], sign: Int) -> [UInt8] {
        guard code.allSatisfy(isDigit), pin.allSatisfy(isDigit) else { return [] }
        var out = code
        var codeIndex = code.count - 1
        var pinIndex = pin.count - 1
        while codeIndex >= 0, pinIndex >= 0 {
            let c = Int(code[codeIndex] - UInt8(ascii: "0"))
            let p = Int(pin[pinIndex] - UInt8(ascii: "0"))
            out[codeIndex] = UInt8(ascii: "0") + UInt8((c + sign * p + 10) % 10)
            codeIndex -= 1
            pinIndex -= 1
        }
        return out
    }
}

/// A Unix time broken down into UTC calendar fields (proleptic Gregorian), valid for every
/// Int64 without overflow. Years are reduced modulo 10000 for the four BCD year digits.
struct UTCTime {
    var year: Int
    var month: Int
    var day: Int
    var hour: Int
    var minute: Int
    var second: Int

    init(_ unixTime: Int64) {
        var days = unixTime / 86_400
        var seconds = unixTime % 86_400
        if seconds < 0 {
            seconds += 86_400
            days -= 1
        }
        hour = Int(seconds / 3600)
        minute = Int(seconds % 3600 / 60)
        second = Int(seconds % 60)

        // Days since 1970-01-01 to a civil date, counting in 400-year cycles of 146 097 days
        // that start on 0000-03-01 (so the leap day ends each cycle year).
        let shifted = days + 719_468
        let cycle = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfCycle = shifted - cycle * 146_097                                  // 0...146096
        let yearOfCycle = (dayOfCycle - dayOfCycle / 1460 + dayOfCycle / 36_524 - dayOfCycle / 146_096) / 365
        let dayOfYear = dayOfCycle - (365 * yearOfCycle + yearOfCycle / 4 - yearOfCycle / 100) // from March 1
        let monthFromMarch = (5 * dayOfYear + 2) / 153                              // 0 = March
        day = Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
        month = Int(monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
        let fullYear = yearOfCycle + cycle * 400 + (month <= 2 ? 1 : 0)
        let reduced = fullYear % 10_000
        year = Int(reduced < 0 ? reduced + 10_000 : reduced)
    }
}
