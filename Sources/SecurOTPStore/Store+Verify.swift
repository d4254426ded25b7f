import SecurOTPCore

/// How a passcode is checked: windows, look-ahead, resync and lockout.
public struct VerifyPolicy: Sendable, Equatable {
    /// TOTP and SecurID: steps accepted either side of the current one (plus learned drift).
    public var window = 1
    /// HOTP: counter values accepted ahead of the next expected one.
    public var hotpLookahead = 10
    /// How far outside the window a code may lie and still start the next-tokencode
    /// dialogue (steps either side for time tokens, counter values ahead for HOTP; 0: never).
    public var resyncWindow = 50
    /// After this many consecutive failures even a right code must be followed by the
    /// token's next code (SecurID's next-tokencode mode; 0: never). Not for OCRA tokens,
    /// whose responses answer challenges and have no next code.
    public var nextCodeAfter = 0
    /// Consecutive failures that lock the user (0: never lock).
    public var deny = 5
    /// Seconds a lock lasts (0: until `securotp unlock`).
    public var unlockTime: Int64 = 600

    public init() {}
}

public enum VerifyOutcome: Sendable, Equatable {
    /// `digits` tells a caller with password+code input where the code began.
    case accepted(serial: String, digits: Int)
    /// A single-use recovery code was accepted and is now spent.
    case acceptedRecoveryCode(remaining: Int)
    case rejected
    /// The code was right but its step or counter was used before.
    case replayed(serial: String)
    /// Locked by earlier failures; nothing was checked.
    case locked
    /// The tokencode was right (and is now used up) but the token needs a new PIN first:
    /// set one with `setPIN`, then ask for a passcode made with it.
    case newPINRequired(serial: String, pinMode: PINMode)
    /// The code matched only outside the window, or failures reached `nextCodeAfter`:
    /// ask for the token's next code and check it with `verifyNextCode(position:)`.
    case nextCodeRequired(serial: String, position: Int64)
}

public struct VerifyResult: Sendable, Equatable {
    public var outcome: VerifyOutcome
    /// The user has no active token (also for unknown users).
    public var userHasTokens: Bool
    /// Failures so far after this attempt, and whether this attempt caused a lock.
    public var failures: Int
    public var lockedNow: Bool
    /// Why, for the admin's log (never a code, PIN or seed): "wrong PIN", "token expired", ...
    public var note: String = ""
}

extension Store {
    /// The row that counts failures of names NSS does not know: they cannot fill the users
    /// table, and cannot lock out real accounts (forward_pass runs before any password check).
    public static let unresolvedUsersKey = "(unresolved users)"

    /// Whether `user` has at least one active token.
    public func hasActiveTokens(user: String) throws(StoreError) -> Bool {
        let statement = try db.prepare("SELECT 1 FROM tokens WHERE user = ? AND state = 'active' LIMIT 1")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step()
    }

    /// Checks `input` against every active token of `user` (and the user's recovery codes) and
    /// records the result in one BEGIN IMMEDIATE transaction: an accepted step or counter is
    /// stored before this returns (WAL, synchronous=FULL), so the same code can never be
    /// accepted twice — not even by two logins at the same instant, which serialise on the
    /// write lock.
    ///
    /// With `codeAtEnd`, the code is the last `digits` characters of `input` (password+code).
    /// Users without tokens and unknown users are answered like users with a wrong code:
    /// the same HMAC work and the same failure write, so neither timing nor result tells them apart.
    ///
    /// `failureKey` names the row failures are counted on (default: `user`); `countsFailure`
    /// false checks without counting a miss (try_first_pass).
    ///
    /// `challenge` is the OCRA challenge the login showed (OCRA tokens are skipped without one).
    public func verify(user: String, input: UnsafeBufferPointer<UInt8>, codeAtEnd: Bool,
                       policy: VerifyPolicy, now: Int64, failureKey: String? = nil, countsFailure: Bool = true,
                       challenge: String? = nil) throws(StoreError) -> VerifyResult {
        let failureUser = failureKey ?? user
        return try db.immediateTransaction { () throws(StoreError) -> VerifyResult in
            var state = try userState(failureUser)
            if state.isLocked(at: now) {
                return VerifyResult(outcome: .locked, userHasTokens: true, failures: state.failures, lockedNow: false)
            }
            if state.lockedUntil != 0 { state = UserState(failures: 0, lockedUntil: 0) } // lock ran out

            if !codeAtEnd, RecoveryCodes.looksLikeCode(input) {
                if let remaining = try spendRecoveryCode(user: user, input: input, now: now) {
                    try clearFailures(failureUser)
                    return VerifyResult(outcome: .acceptedRecoveryCode(remaining: remaining), userHasTokens: true, failures: 0, lockedNow: false)
                }
                return try recordFailure(failureUser, state, policy, now, outcome: .rejected, hasTokens: true,
                                         note: "not a valid unused recovery code", counted: countsFailure)
            }

            let candidates = try activeTokens(user: user)
            var replayedSerial: String?
            var outsideWindow: (serial: String, position: Int64)?
            var note = candidates.isEmpty ? "no active token" : "wrong code"
            for candidate in candidates {
                let record = candidate.record
                if record.isExpired(at: now) {
                    note = "token \(record.serial) expired"
                    continue
                }
                if record.kind == .ocra && challenge == nil { continue }
                let seed = try openSeed(candidate.sealedSeed, record)
                let digits = record.parameters.digits
                // What the user typed: the code alone, the PIN before it, or password+code.
                let passcode: UnsafeBufferPointer<UInt8>
                if codeAtEnd {
                    guard input.count >= digits else { continue }
                    passcode = UnsafeBufferPointer(rebasing: input[(input.count - digits)...])
                } else {
                    passcode = input
                }
                // A token waiting for its first PIN is answered with the bare tokencode.
                let pinMode = record.needsNewPIN && !record.hasPIN ? PINMode.none : record.pinMode
                let matcher = PasscodeMatcher(mode: pinMode, pinHash: candidate.pinHash, pinLength: record.pinLength, passcode: passcode)
                let found = matcher.find(in: codes(record, seed: seed, around: now, policy: policy, challenge: challenge))
                switch found {
                case .match(let position):
                    guard isFresh(position, record) else {
                        replayedSerial = replayedSerial ?? record.serial
                        continue
                    }
                    // A challenge-response token has no next code to ask for.
                    if policy.nextCodeAfter > 0, state.failures >= policy.nextCodeAfter, record.kind != .ocra {
                        return VerifyResult(outcome: .nextCodeRequired(serial: record.serial, position: position), userHasTokens: true,
                                            failures: state.failures, lockedNow: false, note: "next code required after \(state.failures) failures")
                    }
                    try recordAcceptance(record, position: position, now: now)
                    try clearFailures(failureUser)
                    if record.needsNewPIN {
                        return VerifyResult(outcome: .newPINRequired(serial: record.serial, pinMode: record.pinMode), userHasTokens: true,
                                            failures: 0, lockedNow: false)
                    }
                    return VerifyResult(outcome: .accepted(serial: record.serial, digits: codeAtEnd ? digits : passcode.count),
                                        userHasTokens: true, failures: 0, lockedNow: false)
                case .wrongPIN:
                    note = "right tokencode, wrong PIN (token \(record.serial))"
                case .none:
                    break
                }
                // PINPad passcodes cost a slow PIN hash per candidate code: no wide search for them.
                if outsideWindow == nil, policy.resyncWindow > 0, pinMode != .addedByToken, record.kind != .ocra,
                   case .match(let position) = matcher.find(in: codes(record, seed: seed, around: now, policy: policy, resync: true)),
                   isFresh(position, record) {
                    outsideWindow = (record.serial, position)
                }
            }
            if candidates.isEmpty { burnDecoyWork(input: input, policy: policy) }
            if let outsideWindow, replayedSerial == nil {
                // Not a failure yet: the next code decides (verifyNextCode counts it then).
                return VerifyResult(outcome: .nextCodeRequired(serial: outsideWindow.serial, position: outsideWindow.position),
                                    userHasTokens: true, failures: state.failures, lockedNow: false, note: "code outside the window; asking for the next one")
            }
            let outcome: VerifyOutcome = replayedSerial.map { .replayed(serial: $0) } ?? .rejected
            return try recordFailure(failureUser, state, policy, now, outcome: outcome, hasTokens: !candidates.isEmpty, note: note,
                                     counted: countsFailure)
        }
    }

    /// Second half of the next-tokencode dialogue: `input` must be the code that follows the
    /// one found at `position` on token `serial`. Accepting it stores the token's drift.
    public func verifyNextCode(user: String, serial: String, position: Int64, input: UnsafeBufferPointer<UInt8>,
                               policy: VerifyPolicy, now: Int64) throws(StoreError) -> VerifyResult {
        try db.immediateTransaction { () throws(StoreError) -> VerifyResult in
            let state = try userState(user)
            if state.isLocked(at: now) {
                return VerifyResult(outcome: .locked, userHasTokens: true, failures: state.failures, lockedNow: false)
            }
            guard let candidate = try activeTokens(user: user).first(where: { $0.record.serial == serial }),
                  !candidate.record.isExpired(at: now), position < Int64.max - 1 else {
                return try recordFailure(user, state, policy, now, outcome: .rejected, hasTokens: true, note: "token \(serial) gone during resync")
            }
            let record = candidate.record
            let seed = try openSeed(candidate.sealedSeed, record)
            let next = position + 1
            let pinMode = record.needsNewPIN && !record.hasPIN ? PINMode.none : record.pinMode
            let matcher = PasscodeMatcher(mode: pinMode, pinHash: candidate.pinHash, pinLength: record.pinLength, passcode: input)
            guard case .match = matcher.find(in: [(position: next, code: code(record, seed: seed, position: next))]), isFresh(next, record) else {
                return try recordFailure(user, state, policy, now, outcome: .rejected, hasTokens: true, note: "next code did not follow (token \(serial))")
            }
            try recordAcceptance(record, position: next, now: now, learnDriftFrom: currentPosition(record, now: now))
            try clearFailures(user)
            if record.needsNewPIN {
                return VerifyResult(outcome: .newPINRequired(serial: serial, pinMode: record.pinMode), userHasTokens: true, failures: 0, lockedNow: false)
            }
            return VerifyResult(outcome: .accepted(serial: serial, digits: input.count), userHasTokens: true, failures: 0, lockedNow: false,
                                note: "resynchronised")
        }
    }

    // MARK: codes

    struct Candidate {
        var record: TokenRecord
        var sealedSeed: [UInt8]
        var pinHash: [UInt8]
    }

    func activeTokens(user: String) throws(StoreError) -> [Candidate] {
        let statement = try db.prepare("""
            SELECT \(Self.tokenColumns), sealed_seed, pin_hash FROM tokens
            WHERE user = ? AND state = 'active' ORDER BY created, serial
            """)
        try statement.bind(.text(user))
        var candidates: [Candidate] = []
        while try statement.step() {
            guard let record = Self.token(from: statement) else { continue }
            candidates.append(Candidate(record: record, sealedSeed: statement.blob(Self.tokenColumnCount),
                                        pinHash: statement.blob(Self.tokenColumnCount + 1)))
        }
        return candidates
    }

    func openSeed(_ sealed: [UInt8], _ record: TokenRecord) throws(StoreError) -> SecretBytes {
        guard let seed = SeedSealing.open(sealed, key: keys.dataKey, user: record.user, serial: record.serial) else {
            throw StoreError(.corrupt, "sealed seed of token \(record.serial) (user \(record.user)) does not open: altered, moved, or sealed under another key file")
        }
        return seed
    }

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
            // A fresh random challenge per login makes each response single-use by itself.
            case .challengeOnly: true
            case .invalid: false
            }
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

    /// The OCRA suite of the user's first active OCRA token, if any: the login shows a
    /// challenge in that suite's question format.
    public func ocraSuite(user: String, now: Int64) throws(StoreError) -> OCRASuite? {
        // One indexed lookup on every login's path; most users have no OCRA token.
        let statement = try db.prepare("""
            SELECT suite FROM tokens WHERE user = ? AND kind = 'ocra' AND state = 'active' AND (expires = 0 OR expires > ?)
            ORDER BY created, serial
            """)
        defer { statement.reset() }
        try statement.bind(.text(user), .integer(now))
        while try statement.step() {
            if let suite = try? OCRASuite(statement.text(0)) { return suite }
        }
        return nil
    }

    // MARK: recording

    /// Conditional update: only moves the step/counter forward, so even a second writer that
    /// somehow bypassed the transaction could not accept the same code.
    func recordAcceptance(_ record: TokenRecord, position: Int64, now: Int64, learnDriftFrom expected: Int64? = nil) throws(StoreError) {
        let drift = expected.map { record.drift + (position - $0) } ?? record.drift
        var kind = record.kind
        if kind == .ocra {
            switch OCRAState(record) {
            case .counter: kind = .hotp
            case .time: kind = .totp
            case .challengeOnly, .invalid:
                try db.prepare("UPDATE tokens SET last_used = ? WHERE serial = ?").bind(.integer(now), .text(record.serial)).run()
                return
            }
        }
        switch kind {
        case .totp, .securid, .ocra:
            // Compare-and-swap on the value this check read: the step only moves forward, once.
            try db.prepare("UPDATE tokens SET last_step = ?1, last_used = ?2, drift = ?3 WHERE serial = ?4 AND last_step = ?5 AND ?1 > ?5")
                .bind(.integer(position), .integer(now), .integer(drift), .text(record.serial), .integer(record.lastStep)).run()
        case .hotp:
            let previous = Int64(bitPattern: record.parameters.counter)
            guard position < Int64.max - 1 else { throw StoreError(.corrupt, "token \(record.serial) has run out of counter values") }
            try db.prepare("UPDATE tokens SET counter = ?1, last_used = ?2 WHERE serial = ?3 AND counter = ?4 AND ?1 > ?4")
                .bind(.integer(position + 1), .integer(now), .text(record.serial), .integer(previous)).run()
        }
        guard db.changes == 1 else { throw StoreError(.database, "token \(record.serial) changed during verification; try again") }
    }

    func clearFailures(_ user: String) throws(StoreError) {
        try db.prepare("DELETE FROM users WHERE name = ?").bind(.text(user)).run()
    }

    func recordFailure(_ user: String, _ state: UserState, _ policy: VerifyPolicy, _ now: Int64,
                       outcome: VerifyOutcome, hasTokens: Bool, note: String, counted: Bool = true) throws(StoreError) -> VerifyResult {
        guard counted else {
            return VerifyResult(outcome: outcome, userHasTokens: hasTokens, failures: state.failures, lockedNow: false, note: note)
        }
        let failures = state.failures + 1
        let lockNow = policy.deny > 0 && failures >= policy.deny
        let lockedUntil = lockNow ? (policy.unlockTime > 0 ? now + policy.unlockTime : UserState.lockedUntilUnlocked) : 0
        try db.prepare("""
            INSERT INTO users (name, failures, locked_until, last_failure) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT(name) DO UPDATE SET failures = ?2, locked_until = ?3, last_failure = ?4
            """).bind(.text(user), .integer(Int64(failures)), .integer(lockedUntil), .integer(now)).run()
        return VerifyResult(outcome: outcome, userHasTokens: hasTokens, failures: failures, lockedNow: lockNow, note: note)
    }

    /// The HMAC work of one default TOTP token, with a throwaway key.
    private func burnDecoyWork(input: UnsafeBufferPointer<UInt8>, policy: VerifyPolicy) {
        let decoy = SecretBytes(count: 20)
        var sink: UInt8 = 0
        for step in 0...(2 * max(0, policy.window)) {
            let code = OTP.hotp(secret: decoy, counter: UInt64(step), digits: 6, algorithm: .sha1)
            sink ^= code.withUnsafeBufferPointer { ConstantTime.equal($0, input) } ? 1 : 0
        }
        _ = sink
    }
}
