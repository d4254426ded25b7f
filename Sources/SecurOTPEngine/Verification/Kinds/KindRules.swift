import SecurOTPCore

/// What a kind of token owns besides making and accepting codes (`CodeRules`): which stored
/// rows it can use, what a new token must satisfy, and what the rest of the system asks about
/// it (code lengths told to hosts, listing, resync, offline codes, challenges). Each kind's
/// type in this folder conforms; `TokenKind`'s properties below answer for a kind, one switch
/// per question, so a new kind is a new type here plus one case in each switch (the compiler
/// names every one) and in `TokenCodes.init` (docs/design.md, "Where to add a token kind").
///
/// Static requirements on concrete types, never `any KindRules.Type`: the module builds as
/// Embedded Swift, which has no existentials of non-class protocols.
protocol KindRules {
    /// How `TokenRecord.parameters` reads a row: `.hotp` keeps a counter, `.totp` a period.
    static var parameterKind: OATHKind { get }
    /// Whether the kind's own columns of a stored row hold values it can use. The columns
    /// every kind has are checked by `TokenRecord(row:)`; a damaged row is never verified.
    static func columnsAreUsable(_ row: TokenRow) -> Bool
    /// What is wrong with a token about to be enrolled or imported, if anything.
    static func problem(adding token: NewToken) -> String?
    /// The length of the codes a host may expect before its first prompt; nil when the
    /// length comes with what the preflight hands out (OCRA: its challenge).
    static func promptDigits(_ record: TokenRecord) -> Int?
    /// Positions are counters that only move forward (event tokens), not time steps: listed
    /// as a counter, resynchronised forwards, no clock drift.
    static var countsEvents: Bool { get }
    /// Codes answer a challenge the verifier issued (OCRA): no next-code dialogue, no resync.
    static var answersChallenges: Bool { get }
    /// Hosts may keep slow hashes of its next codes for when the validator is down.
    static var hasOfflineCodes: Bool { get }
    /// The algorithm as listings show it.
    static func algorithmName(_ record: TokenRecord) -> String
}

extension KindRules {
    static func promptDigits(_ record: TokenRecord) -> Int? { record.parameters.digits }
    static var answersChallenges: Bool { false }
    static var hasOfflineCodes: Bool { false }
    static func algorithmName(_ record: TokenRecord) -> String { record.parameters.algorithm.name }

    /// What OATH tokens (HOTP, TOTP) need: a usable secret and OATH parameters.
    static func oathProblem(_ token: NewToken) -> String? {
        if token.seed.count < 10 || token.seed.count > 128 { return "token secret must be 10–128 bytes (got \(token.seed.count))" }
        if token.parameters.counter > 1 << 52 { return "HOTP counter \(token.parameters.counter) is beyond 2^52; reset the token" }
        return token.parameters.problem
    }
}

extension HOTPCodes: KindRules {
    static var parameterKind: OATHKind { .hotp }
    static func columnsAreUsable(_ row: TokenRow) -> Bool { true }
    static func problem(adding token: NewToken) -> String? { oathProblem(token) }
    static var countsEvents: Bool { true }
    static var hasOfflineCodes: Bool { true }
}

extension TOTPCodes: KindRules {
    static var parameterKind: OATHKind { .totp }
    static func columnsAreUsable(_ row: TokenRow) -> Bool { (1...300).contains(row.period) }
    static func problem(adding token: NewToken) -> String? { oathProblem(token) }
    static var countsEvents: Bool { false }
}

extension SecurIDCodes: KindRules {
    static var parameterKind: OATHKind { .totp }
    static func columnsAreUsable(_ row: TokenRow) -> Bool { (1...300).contains(row.period) }
    static func problem(adding token: NewToken) -> String? {
        if token.seed.count != 16 { return "SecurID seed must be 16 bytes (got \(token.seed.count))" }
        if !(1...8).contains(token.parameters.digits) { return "SecurID tokens show 1–8 digits (got \(token.parameters.digits))" }
        if token.parameters.period != 30 && token.parameters.period != 60 {
            return "SecurID interval must be 30 or 60 s (got \(token.parameters.period))"
        }
        return nil
    }
    static var countsEvents: Bool { false }
    static func algorithmName(_ record: TokenRecord) -> String { "AES-128" }
}

extension OCRACodes: KindRules {
    // Its suite says everything; the period column is not read.
    static var parameterKind: OATHKind { .totp }
    static func columnsAreUsable(_ row: TokenRow) -> Bool { true }
    static func problem(adding token: NewToken) -> String? {
        if token.seed.count < 16 || token.seed.count > 128 { return "OCRA key must be 16–128 bytes (got \(token.seed.count))" }
        let parsed: OCRASuite
        do { parsed = try OCRASuite(token.suite) } catch { return "OCRA suite \(token.suite): \(error.message)" }
        if parsed.passwordHash != nil || parsed.sessionLength != nil {
            return "OCRA suites with a password hash (P) or session data (S) are not supported at login yet"
        }
        if parsed.digits < 4 { return "OCRA suites with 0 digits (full HMAC) cannot be typed at a login prompt" }
        if !parsed.hasSafeChallengeSpace {
            return "OCRA suite \(token.suite) draws its challenges from too small a space: someone who saw one response could start logins until its challenge comes up again; use \(OCRASuite.safeChallengeRule)"
        }
        return nil
    }
    static func promptDigits(_ record: TokenRecord) -> Int? { nil }
    static var countsEvents: Bool { true }
    static var answersChallenges: Bool { true }
}

/// Each question of `KindRules`, answered for a kind by its type.
extension TokenKind {
    public var parameterKind: OATHKind {
        switch self {
        case .hotp: HOTPCodes.parameterKind
        case .totp: TOTPCodes.parameterKind
        case .securid: SecurIDCodes.parameterKind
        case .ocra: OCRACodes.parameterKind
        }
    }

    public func columnsAreUsable(_ row: TokenRow) -> Bool {
        switch self {
        case .hotp: HOTPCodes.columnsAreUsable(row)
        case .totp: TOTPCodes.columnsAreUsable(row)
        case .securid: SecurIDCodes.columnsAreUsable(row)
        case .ocra: OCRACodes.columnsAreUsable(row)
        }
    }

    public func problem(adding token: NewToken) -> String? {
        switch self {
        case .hotp: HOTPCodes.problem(adding: token)
        case .totp: TOTPCodes.problem(adding: token)
        case .securid: SecurIDCodes.problem(adding: token)
        case .ocra: OCRACodes.problem(adding: token)
        }
    }

    public func promptDigits(_ record: TokenRecord) -> Int? {
        switch self {
        case .hotp: HOTPCodes.promptDigits(record)
        case .totp: TOTPCodes.promptDigits(record)
        case .securid: SecurIDCodes.promptDigits(record)
        case .ocra: OCRACodes.promptDigits(record)
        }
    }

    public var countsEvents: Bool {
        switch self {
        case .hotp: HOTPCodes.countsEvents
        case .totp: TOTPCodes.countsEvents
        case .securid: SecurIDCodes.countsEvents
        case .ocra: OCRACodes.countsEvents
        }
    }

    public var answersChallenges: Bool {
        switch self {
        case .hotp: HOTPCodes.answersChallenges
        case .totp: TOTPCodes.answersChallenges
        case .securid: SecurIDCodes.answersChallenges
        case .ocra: OCRACodes.answersChallenges
        }
    }

    public var hasOfflineCodes: Bool {
        switch self {
        case .hotp: HOTPCodes.hasOfflineCodes
        case .totp: TOTPCodes.hasOfflineCodes
        case .securid: SecurIDCodes.hasOfflineCodes
        case .ocra: OCRACodes.hasOfflineCodes
        }
    }

    public func algorithmName(_ record: TokenRecord) -> String {
        switch self {
        case .hotp: HOTPCodes.algorithmName(record)
        case .totp: TOTPCodes.algorithmName(record)
        case .securid: SecurIDCodes.algorithmName(record)
        case .ocra: OCRACodes.algorithmName(record)
        }
    }
}
