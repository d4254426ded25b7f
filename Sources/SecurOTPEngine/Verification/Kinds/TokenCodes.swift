import SecurOTPCore

/// How one kind of token makes codes and accepts them: where a login looks (`centre`,
/// `positions`), what the token shows there (`code`), what counts as not used yet
/// (`isFresh`), and the conditional write that uses a position up (`acceptance`). Each kind
/// is one type in this folder, which also answers `KindRules`; `TokenCodes` picks it for a
/// record. To add a kind: a type here, the `TokenKind` case, and its case in `TokenCodes` and
/// in the switches of `KindRules.swift` (docs/design.md, "Where to add a token kind").
protocol CodeRules {
    /// The step (time tokens) or counter (counter tokens) that `now` falls on, drift included.
    func centre(now: Int64) -> Int64
    /// The positions a login may use around `centre`, most likely first; with `resync`, the
    /// wider band beyond the window instead. May contain negative positions (dropped).
    func positions(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64]
    /// The code the token shows at `position`; `challenge`: OCRA's question.
    func code(seed: SecretBytes, position: Int64, challenge: String?) -> [UInt8]
    /// Whether `position` lies after everything this token accepted before.
    func isFresh(_ position: Int64) -> Bool
    /// The write that accepts `position`: a conditional move past it, so the same code can
    /// never be accepted again. `drift`: what the token's drift becomes.
    func acceptance(position: Int64, now: Int64, drift: Int64) throws(StoreError) -> StateWrite
}

/// The rules of a record's kind. An enum, not an existential: the module builds as Embedded
/// Swift, which has no existentials of non-class protocols.
enum TokenCodes: CodeRules {
    case hotp(HOTPCodes), totp(TOTPCodes), securid(SecurIDCodes), ocra(OCRACodes)

    init(_ record: TokenRecord) {
        switch record.kind {
        case .hotp: self = .hotp(HOTPCodes(record))
        case .totp: self = .totp(TOTPCodes(record))
        case .securid: self = .securid(SecurIDCodes(record))
        case .ocra: self = .ocra(OCRACodes(record))
        }
    }

    func centre(now: Int64) -> Int64 {
        switch self {
        case .hotp(let rules): rules.centre(now: now)
        case .totp(let rules): rules.centre(now: now)
        case .securid(let rules): rules.centre(now: now)
        case .ocra(let rules): rules.centre(now: now)
        }
    }

    func positions(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64] {
        switch self {
        case .hotp(let rules): rules.positions(around: centre, policy: policy, resync: resync)
        case .totp(let rules): rules.positions(around: centre, policy: policy, resync: resync)
        case .securid(let rules): rules.positions(around: centre, policy: policy, resync: resync)
        case .ocra(let rules): rules.positions(around: centre, policy: policy, resync: resync)
        }
    }

    func code(seed: SecretBytes, position: Int64, challenge: String?) -> [UInt8] {
        switch self {
        case .hotp(let rules): rules.code(seed: seed, position: position, challenge: challenge)
        case .totp(let rules): rules.code(seed: seed, position: position, challenge: challenge)
        case .securid(let rules): rules.code(seed: seed, position: position, challenge: challenge)
        case .ocra(let rules): rules.code(seed: seed, position: position, challenge: challenge)
        }
    }

    func isFresh(_ position: Int64) -> Bool {
        switch self {
        case .hotp(let rules): rules.isFresh(position)
        case .totp(let rules): rules.isFresh(position)
        case .securid(let rules): rules.isFresh(position)
        case .ocra(let rules): rules.isFresh(position)
        }
    }

    func acceptance(position: Int64, now: Int64, drift: Int64) throws(StoreError) -> StateWrite {
        switch self {
        case .hotp(let rules): try rules.acceptance(position: position, now: now, drift: drift)
        case .totp(let rules): try rules.acceptance(position: position, now: now, drift: drift)
        case .securid(let rules): try rules.acceptance(position: position, now: now, drift: drift)
        case .ocra(let rules): try rules.acceptance(position: position, now: now, drift: drift)
        }
    }
}

/// What counter tokens and time-step tokens share, whatever makes their codes.
enum Positions {
    /// Counter tokens: the counter and `hotp_lookahead` after it, then the positions just
    /// behind it (only to recognise a replay); with `resync`, the band after the look-ahead.
    static func counter(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64] {
        let ahead = Int64(max(0, policy.hotpLookahead))
        if resync {
            return Array((centre &+ ahead &+ 1)...(centre &+ ahead &+ Int64(max(1, policy.resyncWindow))))
        }
        return Array(centre...(centre &+ ahead)) + Array(max(0, centre - ahead)..<centre)
    }

    /// Time tokens: the current step, then outwards to `window` steps each way; with
    /// `resync`, the steps beyond the window up to `resync_window`.
    static func timeSteps(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64] {
        let window = Int64(max(0, policy.window))
        let reach = resync ? Int64(policy.resyncWindow) : window
        var positions: [Int64] = resync ? [] : [centre]
        for distance in Int64(1)...max(1, reach) where distance <= reach {
            if resync && distance <= window { continue }
            positions.append(centre + distance)
            positions.append(centre - distance)
        }
        return positions
    }

    /// Counter tokens keep the next counter: accepting `position` moves it to `position + 1`.
    static func counterAcceptance(_ record: TokenRecord, position: Int64, now: Int64) throws(StoreError) -> StateWrite {
        guard position < Int64.max - 1 else { throw StoreError(.corrupt, "token \(record.serial) has run out of counter values") }
        return .advanceCounter(serial: record.serial, from: Int64(bitPattern: record.parameters.counter), to: position + 1, lastUsed: now)
    }

    /// Time tokens keep the last accepted step.
    static func stepAcceptance(_ record: TokenRecord, position: Int64, now: Int64, drift: Int64) -> StateWrite {
        .advanceStep(serial: record.serial, from: record.lastStep, to: position, drift: drift, lastUsed: now)
    }
}
