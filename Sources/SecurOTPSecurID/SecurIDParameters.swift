/// The parameters of an RSA SecurID 128-bit time-based token that, with its 16-byte seed and
/// 12-digit serial, determine its tokencodes (docs/tokens.md; research: securid-formats.md §1).
public struct SecurIDParameters: Sendable, Equatable {
    /// Tokencode length, 6 or 8 in practice (1...8 allowed by the format).
    public var digits: Int
    /// 30 or 60 seconds.
    public var interval: Int
    /// "PINPad style": the device adds the PIN into the tokencode digit by digit (AddPIN flag).
    public var addsPIN: Bool
    /// The LocalPIN flag, carried but unused by the algorithm.
    public var localPIN: Bool
    /// Last valid day, counted in days since 2000-01-01 UTC (0: no expiry given).
    public var expirationDay: Int
    /// The raw flags word, kept for round-tripping exports.
    public var flags: UInt16

    public init(digits: Int, interval: Int, addsPIN: Bool, localPIN: Bool = false, expirationDay: Int = 0, flags: UInt16 = 0) {
        self.digits = digits
        self.interval = interval
        self.addsPIN = addsPIN
        self.localPIN = localPIN
        self.expirationDay = expirationDay
        self.flags = flags
    }

    /// Unix time of the end of the expiration day (UTC), or nil without expiry.
    public var expiresAt: Int64? {
        guard expirationDay > 0 else { return nil }
        // Overflow-safe: an absurdly distant day saturates instead of trapping.
        let (days, overflow) = Int64(expirationDay).addingReportingOverflow(1)
        let (span, overflow2) = days.multipliedReportingOverflow(by: 86_400)
        let (end, overflow3) = span.addingReportingOverflow(946_684_800)
        return overflow || overflow2 || overflow3 ? Int64.max : end
    }
}
