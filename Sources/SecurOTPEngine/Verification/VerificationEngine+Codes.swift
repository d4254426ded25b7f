import SecurOTPCore

/// The engine's view of a token's codes; what each kind does is its own type (Kinds/).
extension VerificationEngine {
    /// The step (time tokens) or counter (counter tokens) that `now` falls on, drift included.
    func currentPosition(_ record: TokenRecord, now: Int64) -> Int64 {
        TokenCodes(record).centre(now: now)
    }

    /// The codes a token shows at the positions a login may use: the window (or, with
    /// `resync`, the wider band around it), each with its step or counter. Computed lazily,
    /// most likely first (the current step; the counter and what follows it), so a right code
    /// usually costs one HMAC; positions just behind an HOTP counter come last, only to
    /// recognise a replay. A wrong code costs the whole window whatever its value.
    func codes(_ record: TokenRecord, seed: SecretBytes, around now: Int64, policy: VerifyPolicy,
               resync: Bool = false, challenge: String? = nil) -> LazyMapSequence<[Int64], (position: Int64, code: [UInt8])> {
        let rules = TokenCodes(record)
        let positions = rules.positions(around: rules.centre(now: now), policy: policy, resync: resync)
        return positions.filter { $0 >= 0 }.lazy.map { position in
            (position: position, code: rules.code(seed: seed, position: position, challenge: challenge))
        }
    }

    func code(_ record: TokenRecord, seed: SecretBytes, position: Int64, challenge: String? = nil) -> [UInt8] {
        TokenCodes(record).code(seed: seed, position: position, challenge: challenge)
    }

    /// A position is fresh when it lies after everything this token accepted before.
    func isFresh(_ position: Int64, _ record: TokenRecord) -> Bool {
        TokenCodes(record).isFresh(position)
    }

    /// The write that accepts `position` of a token (CodeRules.acceptance). `learnDriftFrom`:
    /// the position the token was expected at (the drift grows by the difference).
    func acceptance(_ record: TokenRecord, position: Int64, now: Int64, learnDriftFrom expected: Int64? = nil) throws(StoreError) -> StateWrite {
        let drift = expected.map { record.drift + (position - $0) } ?? record.drift
        return try TokenCodes(record).acceptance(position: position, now: now, drift: drift)
    }
}
