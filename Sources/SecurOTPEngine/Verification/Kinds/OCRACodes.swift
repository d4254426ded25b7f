import SecurOTPCore

/// RFC 6287 challenge-response tokens. Besides the challenge, the suite may ask for a counter
/// (then positions are counters, as HOTP's) or a time step (steps, without drift); a suite
/// with neither is challenge-only: one position, fresh because the verifier never issues a
/// challenge twice.
struct OCRACodes: CodeRules {
    /// What the suite asks for besides the challenge.
    enum Mode {
        case counter(OCRASuite), time(OCRASuite), challengeOnly(OCRASuite)
        /// A suite that no longer parses: never matches.
        case invalid
    }

    let record: TokenRecord
    let mode: Mode

    init(_ record: TokenRecord) {
        self.record = record
        guard let suite = try? OCRASuite(record.suite) else {
            mode = .invalid
            return
        }
        if suite.usesCounter {
            mode = .counter(suite)
        } else if suite.timeStepSeconds != nil {
            mode = .time(suite)
        } else {
            mode = .challengeOnly(suite)
        }
    }

    /// Why this token may not answer at a login although it is active: a challenge-only
    /// suite from too small a space (enrolled before the rule; `OCRASuite.isSafeAtLogin`).
    var refusalAtLogin: String? {
        guard case .challengeOnly(let suite) = mode, !suite.isSafeAtLogin else { return nil }
        return "OCRA suite \(suite.text) has too few challenges to be safe without a counter or time; re-enroll it (\(OCRASuite.safeChallengeRule))"
    }

    func centre(now: Int64) -> Int64 {
        switch mode {
        case .counter: Int64(bitPattern: record.parameters.counter)
        case .time(let suite): Int64(clamping: suite.timeStep(unixTime: now) ?? 0)
        case .challengeOnly, .invalid: 0
        }
    }

    func positions(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64] {
        switch mode {
        case .counter: Positions.counter(around: centre, policy: policy, resync: resync)
        case .time: Positions.timeSteps(around: centre, policy: policy, resync: resync)
        case .challengeOnly: [0]
        case .invalid: []
        }
    }

    func code(seed: SecretBytes, position: Int64, challenge: String?) -> [UInt8] {
        guard let challenge else { return [] }
        return switch mode {
        case .counter(let suite): (try? OCRA.response(suite: suite, key: seed, counter: UInt64(position), question: challenge)) ?? []
        case .time(let suite): (try? OCRA.response(suite: suite, key: seed, question: challenge, timestamp: UInt64(position))) ?? []
        case .challengeOnly(let suite): (try? OCRA.response(suite: suite, key: seed, question: challenge)) ?? []
        case .invalid: []
        }
    }

    func isFresh(_ position: Int64) -> Bool {
        switch mode {
        case .counter: position >= Int64(bitPattern: record.parameters.counter)
        case .time: position > record.lastStep
        // The verifier issues each challenge once, charged as an attempt (issueChallenge),
        // from a space of at least 10^8 (OCRASuite.isSafeAtLogin): a response is not
        // accepted again unless its challenge comes up again, which nobody can wait for.
        case .challengeOnly(let suite): suite.isSafeAtLogin
        case .invalid: false
        }
    }

    func acceptance(position: Int64, now: Int64, drift: Int64) throws(StoreError) -> StateWrite {
        switch mode {
        case .counter: try Positions.counterAcceptance(record, position: position, now: now)
        case .time: Positions.stepAcceptance(record, position: position, now: now, drift: drift)
        case .challengeOnly, .invalid: .markUsed(serial: record.serial, lastUsed: now)
        }
    }
}
