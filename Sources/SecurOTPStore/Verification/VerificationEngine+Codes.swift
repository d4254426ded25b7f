import SecurOTPCore

extension VerificationEngine {
    /// The step (time tokens) or counter (HOTP) that `now` falls on, drift included.
    func currentPosition(_ record: TokenRecord, now: Int64) -> Int64 {
        switch record.kind {
        case .hotp: Int64(bitPattern: record.parameters.counter)
        case .totp, .securid: Int64(clamping: OTP.timeStep(unixTime: now, period: record.parameters.period) ?? 0) + record.drift
        case .ocra:
            switch OCRAState(record) {
            case .counter: Int64(bitPattern: record.parameters.counter)
            case .time(let suite): Int64(clamping: suite.timeStep(unixTime: now) ?? 0)
            case .challengeOnly, .invalid: 0
            }
        }
    }

    /// The codes a token shows at the positions a login may use: the window (or, with
    /// `resync`, the wider band around it), each with its step or counter. Computed lazily,
    /// most likely first (the current step; the counter and what follows it), so a right code
    /// usually costs one HMAC; positions just behind an HOTP counter come last, only to
    /// recognise a replay. A wrong code costs the whole window whatever its value.
    func codes(_ record: TokenRecord, seed: SecretBytes, around now: Int64, policy: VerifyPolicy,
               resync: Bool = false, challenge: String? = nil) -> LazyMapSequence<[Int64], (position: Int64, code: [UInt8])> {
        let centre = currentPosition(record, now: now)
        let ocra = OCRAState(record)
        var positions: [Int64] = []
        switch (record.kind, ocra) {
        case (.ocra, .challengeOnly):
            positions = [0]
        case (.ocra, .invalid):
            break
        case (.hotp, _), (.ocra, .counter):
            let ahead = Int64(max(0, policy.hotpLookahead))
            if resync {
                positions = Array((centre &+ ahead &+ 1)...(centre &+ ahead &+ Int64(max(1, policy.resyncWindow))))
            } else {
                positions = Array(centre...(centre &+ ahead)) + Array(max(0, centre - ahead)..<centre)
            }
        case (.totp, _), (.securid, _), (.ocra, .time):
            let window = Int64(max(0, policy.window))
            let reach = resync ? Int64(policy.resyncWindow) : window
            positions = resync ? [] : [centre]
            for distance in Int64(1)...max(1, reach) where distance <= reach {
                if resync && distance <= window { continue }
                positions.append(centre + distance)
                positions.append(centre - distance)
            }
        }
        return positions.filter { $0 >= 0 }.lazy.map { position in
            (position: position, code: self.code(record, seed: seed, position: position, challenge: challenge, ocra: ocra))
        }
    }

    func code(_ record: TokenRecord, seed: SecretBytes, position: Int64, challenge: String? = nil, ocra: OCRAState? = nil) -> [UInt8] {
        let p = record.parameters
        switch record.kind {
        case .ocra:
            guard let challenge else { return [] }
            let response: [UInt8]
            switch ocra ?? OCRAState(record) {
            case .counter(let suite): response = (try? OCRA.response(suite: suite, key: seed, counter: UInt64(position), question: challenge)) ?? []
            case .time(let suite): response = (try? OCRA.response(suite: suite, key: seed, question: challenge, timestamp: UInt64(position))) ?? []
            case .challengeOnly(let suite): response = (try? OCRA.response(suite: suite, key: seed, question: challenge)) ?? []
            case .invalid: response = []
            }
            return response
        case .totp, .hotp:
            return OTP.hotp(secret: seed, counter: UInt64(position), digits: p.digits, algorithm: p.algorithm)
        case .securid:
            return SecurIDCode.tokencode(seed: seed, serial: record.serial, digits: p.digits, interval: p.period,
                                         unixTime: position &* Int64(p.period))
        }
    }

    /// A position is fresh when it lies after everything this token accepted before.
    func isFresh(_ position: Int64, _ record: TokenRecord) -> Bool {
        switch record.kind {
        case .hotp: position >= Int64(bitPattern: record.parameters.counter)
        case .totp, .securid: position > record.lastStep
        case .ocra:
            switch OCRAState(record) {
            case .counter: position >= Int64(bitPattern: record.parameters.counter)
            case .time: position > record.lastStep
            // The verifier issues each challenge once, charged as an attempt (issueChallenge),
            // from a space of at least 10^8 (OCRASuite.isSafeAtLogin): a response is not
            // accepted again unless its challenge comes up again, which nobody can wait for.
            case .challengeOnly(let suite): suite.isSafeAtLogin
            case .invalid: false
            }
        }
    }

    /// The write that accepts `position` of a token: a conditional move of its step or counter
    /// past `position`, so the same code can never be accepted again. `learnDriftFrom`: the
    /// position the token was expected at (the drift grows by the difference).
    func acceptance(_ record: TokenRecord, position: Int64, now: Int64, learnDriftFrom expected: Int64? = nil) throws(StoreError) -> StateWrite {
        let drift = expected.map { record.drift + (position - $0) } ?? record.drift
        var kind = record.kind
        if kind == .ocra {
            switch OCRAState(record) {
            case .counter: kind = .hotp
            case .time: kind = .totp
            case .challengeOnly, .invalid: return .markUsed(serial: record.serial, lastUsed: now)
            }
        }
        switch kind {
        case .totp, .securid, .ocra:
            return .advanceStep(serial: record.serial, from: record.lastStep, to: position, drift: drift, lastUsed: now)
        case .hotp:
            guard position < Int64.max - 1 else { throw StoreError(.corrupt, "token \(record.serial) has run out of counter values") }
            return .advanceCounter(serial: record.serial, from: Int64(bitPattern: record.parameters.counter), to: position + 1, lastUsed: now)
        }
    }

    /// What an OCRA token's suite asks for besides the challenge.
    enum OCRAState {
        case counter(OCRASuite), time(OCRASuite), challengeOnly(OCRASuite), invalid

        init(_ record: TokenRecord) {
            guard record.kind == .ocra, let suite = try? OCRASuite(record.suite) else {
                self = .invalid
                return
            }
            if suite.usesCounter { self = .counter(suite) } else if suite.timeStepSeconds != nil { self = .time(suite) } else { self = .challengeOnly(suite) }
        }
    }
}
