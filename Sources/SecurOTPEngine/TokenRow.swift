import SecurOTPCore

/// A token as any backend stores it: plain column values, no seed. `TokenRecord(row:)` checks
/// a row like input and `TokenRow(record)` writes one, so every backend stores and reads tokens
/// by the same rules.
public struct TokenRow: Sendable, Equatable {
    public var serial = ""
    public var user = ""
    /// `TokenKind.rawValue`: totp, hotp, securid, ocra; which other columns apply is the kind's
    /// (`KindRules`).
    public var kind = ""
    /// `HashAlgorithm.name`: SHA1, SHA256, SHA512.
    public var algorithm = ""
    public var digits: Int64 = 0
    public var period: Int64 = 0
    /// HOTP and counter-based OCRA: the next counter.
    public var counter: Int64 = 0
    /// Time-based tokens: the last accepted step (-1: none yet).
    public var lastStep: Int64 = -1
    public var nickname = ""
    public var issuer = ""
    public var state = TokenRecord.active
    public var created: Int64 = 0
    public var lastUsed: Int64 = 0
    /// `PINMode.rawValue`: none, prefix, added.
    public var pinMode = "none"
    /// A PIN hash is stored (pin_hash IS NOT NULL).
    public var hasPIN = false
    public var pinLength: Int64 = 0
    public var pinChangeRequired = false
    public var expires: Int64 = 0
    public var drift: Int64 = 0
    public var source = "enroll"
    public var suite = ""

    public init() {}

    /// The columns of `record`, as `TokenRecord(row:)` reads them back.
    public init(_ record: TokenRecord) {
        serial = record.serial
        user = record.user
        kind = record.kind.rawValue
        algorithm = record.parameters.algorithm.name
        digits = Int64(record.parameters.digits)
        period = Int64(record.parameters.period)
        counter = Int64(bitPattern: record.parameters.counter)
        lastStep = record.lastStep
        nickname = record.nickname
        issuer = record.issuer
        state = record.state
        created = record.created
        lastUsed = record.lastUsed
        pinMode = record.pinMode.rawValue
        hasPIN = record.hasPIN
        pinLength = Int64(record.pinLength)
        pinChangeRequired = record.pinChangeRequired
        expires = record.expires
        drift = record.drift
        source = record.source
        suite = record.suite
    }
}

extension TokenRecord {
    /// HOTP and OCRA counters stay far below where a window or resync search could overflow
    /// (imports allow 2^52; a login moves a counter by at most a few thousand).
    static let counterLimit: Int64 = 1 << 62

    /// Reads a stored row; nil when the row is damaged (unknown kind, algorithm or PIN mode,
    /// values out of range, or columns its kind cannot use: `KindRules.columnsAreUsable`).
    /// Verification skips such rows: never a trap inside sshd.
    public init?(row: TokenRow) {
        guard let kind = TokenKind(rawValue: row.kind), let algorithm = HashAlgorithm(name: row.algorithm),
              let pinMode = PINMode(rawValue: row.pinMode),
              (0...10).contains(row.digits), kind.columnsAreUsable(row),
              (0...64).contains(row.pinLength), (-1_000_000...1_000_000).contains(row.drift),
              (0...Self.counterLimit).contains(row.counter) else { return nil }
        self.init(
            serial: row.serial, user: row.user, kind: kind,
            parameters: OATHParameters(kind: kind.parameterKind, algorithm: algorithm, digits: Int(row.digits),
                                       period: Int(row.period), counter: UInt64(bitPattern: row.counter)),
            lastStep: row.lastStep, nickname: row.nickname, issuer: row.issuer, state: row.state,
            created: row.created, lastUsed: row.lastUsed)
        self.pinMode = pinMode
        hasPIN = row.hasPIN
        pinLength = Int(row.pinLength)
        pinChangeRequired = row.pinChangeRequired
        expires = row.expires
        drift = row.drift
        source = row.source
        suite = row.suite
    }
}
