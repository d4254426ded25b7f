/// The CTF "flags word" (research: securid-formats.md §3, bit 15 = most significant) and the
/// expiry rules (§7).
extension SecurIDParameters {
    /// Bit 14: 128-bit AES key (the only kind securotp computes codes for).
    public static let flag128Bit: UInt16 = 0x4000
    /// Bit 13: the CTF seed is encrypted with a password.
    public static let flagPassword: UInt16 = 0x2000
    /// Bit 12: the CTF seed is bound to a device ID.
    public static let flagDeviceID: UInt16 = 0x1000
    /// Bit 11: app-derived seeds.
    public static let flagAppDerived: UInt16 = 0x0800
    /// Bit 10: feature bit 4 ("Mode").
    public static let flagMode: UInt16 = 0x0400
    /// Bit 9: time-derived seeds.
    public static let flagTimeDerived: UInt16 = 0x0200
    // Bit 5 (feature bit 6) is kept in `flags` as read; nothing depends on it.
    /// Bit 4: AddPIN (PIN mode bit 1); bit 3: LocalPIN (PIN mode bit 0).
    public static let flagAddPIN: UInt16 = 0x0010
    public static let flagLocalPIN: UInt16 = 0x0008

    /// Reads a CTF flags word: digits from bits 8–6 (+1), PIN mode from bits 4–3, interval
    /// from bits 1–0 (0 → 30 s, anything else → 60 s, as stoken reads it).
    public init(flagsWord: UInt16, expirationDay: Int) {
        self.init(digits: Int((flagsWord >> 6) & 0x7) + 1,
                  interval: flagsWord & 0x3 == 0 ? 30 : 60,
                  addsPIN: flagsWord & Self.flagAddPIN != 0,
                  localPIN: flagsWord & Self.flagLocalPIN != 0,
                  expirationDay: expirationDay,
                  flags: flagsWord)
    }

    /// A flags word for tokens whose container has no flags (SDTID, CTF v3/v4), built from
    /// their separate fields. Digits outside 1...8 are clamped into the 3-bit field.
    public static func flagsWord(digits: Int, interval: Int, addsPIN: Bool, localPIN: Bool,
                                 is128Bit: Bool = true, timeDerived: Bool = true,
                                 appDerived: Bool = false, mode: Bool = false) -> UInt16 {
        var word: UInt16 = UInt16(min(max(digits, 1), 8) - 1) << 6
        if interval == 60 { word |= 0x1 }
        if addsPIN { word |= flagAddPIN }
        if localPIN { word |= flagLocalPIN }
        if is128Bit { word |= flag128Bit }
        if timeDerived { word |= flagTimeDerived }
        if appDerived { word |= flagAppDerived }
        if mode { word |= flagMode }
        return word
    }

    /// True when the flags say 128-bit key. Tokens built without a flags word (flags == 0)
    /// count as 128-bit: that is the only kind this type describes.
    public var is128Bit: Bool { flags == 0 || flags & Self.flag128Bit != 0 }

    /// Why these parameters cannot produce codes, or nil when they can.
    public var problem: String? {
        if !(1...8).contains(digits) { return "SecurID tokencodes have 1 to 8 digits" }
        if interval != 30 && interval != 60 { return "SecurID tokens change every 30 or 60 seconds" }
        if expirationDay < 0 { return "SecurID expiration day is before 2000-01-01" }
        return nil
    }

    /// True from the first second after the expiration day (UTC) on; never without expiry.
    public func isExpired(at unixTime: Int64) -> Bool {
        guard let end = expiresAt else { return false }
        return unixTime >= end
    }

    /// Whole days left until `expiresAt` (0 on the last day, negative once expired), or nil
    /// without expiry. Rounded toward minus infinity, so it never overstates what is left.
    public func daysUntilExpiry(at unixTime: Int64) -> Int64? {
        guard let end = expiresAt else { return nil }
        let (left, overflow) = end.subtractingReportingOverflow(unixTime)
        if overflow { return unixTime > end ? Int64.min / 86_400 - 1 : Int64.max / 86_400 }
        let days = left / 86_400
        return left % 86_400 < 0 ? days - 1 : days
    }

    /// Days since 2000-01-01 for a proleptic Gregorian UTC date, or nil for an invalid date or
    /// a year outside 1...9999.
    public static func day(year: Int, month: Int, day: Int) -> Int? {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1 else { return nil }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= lengths[month - 1] else { return nil }
        // Count from 0000-03-01 so February's variable length comes last in each year.
        let y = month <= 2 ? year - 1 : year
        let m = month <= 2 ? month + 9 : month - 3
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * m + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let sinceEpoch0 = era * 146_097 + dayOfEra
        return sinceEpoch0 - 730_425   // 2000-01-01 is day 730 425 of this count
    }
}
