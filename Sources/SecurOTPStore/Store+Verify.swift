import SecurOTPCore

/// How a passcode is checked: window, look-ahead and lockout.
public struct VerifyPolicy: Sendable, Equatable {
    /// TOTP: steps accepted either side of the current one.
    public var window = 1
    /// HOTP: counter values accepted ahead of the next expected one.
    public var hotpLookahead = 10
    /// Consecutive failures that lock the user (0: never lock).
    public var deny = 5
    /// Seconds a lock lasts (0: until `securotp unlock`).
    public var unlockTime: Int64 = 600

    public init() {}
}

public enum VerifyOutcome: Sendable, Equatable {
    /// `digits` tells a caller with password+code input where the code began.
    case accepted(serial: String, digits: Int)
    case rejected
    /// The code was right but its step or counter was used before.
    case replayed(serial: String)
    /// Locked by earlier failures; nothing was checked.
    case locked
}

public struct VerifyResult: Sendable, Equatable {
    public var outcome: VerifyOutcome
    /// The user has no active token (also for unknown users).
    public var userHasTokens: Bool
    /// Failures so far after this attempt, and whether this attempt caused a lock.
    public var failures: Int
    public var lockedNow: Bool
}

extension Store {
    /// Whether `user` has at least one active token.
    public func hasActiveTokens(user: String) throws(StoreError) -> Bool {
        let statement = try db.prepare("SELECT 1 FROM tokens WHERE user = ? AND state = 'active' LIMIT 1")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step()
    }

    /// Checks `input` against every active token of `user` and records the result in one
    /// BEGIN IMMEDIATE transaction: an accepted TOTP step or HOTP counter is stored before this
    /// returns (WAL, synchronous=FULL), so the same code can never be accepted twice — not even
    /// by two logins at the same instant, which serialise on the write lock.
    ///
    /// With `codeAtEnd`, the code is the last `digits` characters of `input` (password+code).
    /// Users without tokens and unknown users are answered like users with a wrong code:
    /// the same HMAC work and the same failure write, so neither timing nor result tells them apart.
    public func verify(user: String, input: UnsafeBufferPointer<UInt8>, codeAtEnd: Bool,
                       policy: VerifyPolicy, now: Int64) throws(StoreError) -> VerifyResult {
        try db.immediateTransaction { () throws(StoreError) -> VerifyResult in
            var state = try userState(user)
            if state.isLocked(at: now) {
                return VerifyResult(outcome: .locked, userHasTokens: true, failures: state.failures, lockedNow: false)
            }
            if state.lockedUntil != 0 { state = UserState(failures: 0, lockedUntil: 0) } // lock ran out

            let candidates = try activeTokens(user: user)
            var replayedSerial: String?
            for candidate in candidates {
                guard let seed = SeedSealing.open(candidate.sealedSeed, key: keys.dataKey, user: user, serial: candidate.record.serial) else {
                    throw StoreError(.corrupt, "sealed seed of token \(candidate.record.serial) (user \(user)) does not open: altered, moved, or sealed under another key file")
                }
                let digits = candidate.record.parameters.digits
                guard input.count >= digits, codeAtEnd || input.count == digits else { continue }
                let code = UnsafeBufferPointer(rebasing: input[(input.count - digits)...])
                switch match(candidate.record, seed: seed, code: code, policy: policy, now: now) {
                case .accept(let record):
                    try recordAcceptance(record, now: now)
                    return VerifyResult(outcome: .accepted(serial: record.serial, digits: digits), userHasTokens: true, failures: 0, lockedNow: false)
                case .replay: replayedSerial = replayedSerial ?? candidate.record.serial
                case .none: continue
                }
            }
            if candidates.isEmpty { burnDecoyWork(input: input, policy: policy) }

            let failures = state.failures + 1
            let lockNow = policy.deny > 0 && failures >= policy.deny
            let lockedUntil = lockNow ? (policy.unlockTime > 0 ? now + policy.unlockTime : UserState.lockedUntilUnlocked) : 0
            try db.prepare("""
                INSERT INTO users (name, failures, locked_until, last_failure) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT(name) DO UPDATE SET failures = ?2, locked_until = ?3, last_failure = ?4
                """).bind(.text(user), .integer(Int64(failures)), .integer(lockedUntil), .integer(now)).run()
            let outcome: VerifyOutcome = replayedSerial.map { .replayed(serial: $0) } ?? .rejected
            return VerifyResult(outcome: outcome, userHasTokens: !candidates.isEmpty, failures: failures, lockedNow: lockNow)
        }
    }

    private struct Candidate {
        var record: TokenRecord
        var sealedSeed: [UInt8]
    }

    private enum Match {
        case accept(TokenRecord)
        case replay
        case none
    }

    private func activeTokens(user: String) throws(StoreError) -> [Candidate] {
        let statement = try db.prepare("SELECT \(Self.tokenColumns), sealed_seed FROM tokens WHERE user = ? AND state = 'active' ORDER BY created, serial")
        try statement.bind(.text(user))
        var candidates: [Candidate] = []
        while try statement.step() {
            guard let record = Self.token(from: statement) else { continue }
            candidates.append(Candidate(record: record, sealedSeed: statement.blob(Self.tokenColumnCount)))
        }
        return candidates
    }

    /// Compares every code in the window; all of them are computed so the time taken does not
    /// depend on which one matched.
    private func match(_ record: TokenRecord, seed: SecretBytes, code: UnsafeBufferPointer<UInt8>,
                       policy: VerifyPolicy, now: Int64) -> Match {
        let p = record.parameters
        var accepted: TokenRecord?
        var replay = false
        switch p.kind {
        case .totp:
            guard let current = OTP.timeStep(unixTime: now, period: p.period) else { return .none }
            let window = Int64(max(0, policy.window))
            let currentStep = Int64(clamping: current)
            for step in (currentStep - window)...(currentStep + window) where step >= 0 {
                let expected = OTP.hotp(secret: seed, counter: UInt64(step), digits: p.digits, algorithm: p.algorithm)
                guard expected.withUnsafeBufferPointer({ ConstantTime.equal($0, code) }) else { continue }
                if step > record.lastStep {
                    if accepted == nil {
                        var updated = record
                        updated.lastStep = step
                        accepted = updated
                    }
                } else {
                    replay = true
                }
            }
        case .hotp:
            let next = p.counter
            let lookahead = UInt64(max(0, policy.hotpLookahead))
            // Codes just behind the counter are checked only to report a replay.
            let first = next >= lookahead ? next - lookahead : 0
            var counter = first
            while counter <= next &+ lookahead, counter >= first {
                let expected = OTP.hotp(secret: seed, counter: counter, digits: p.digits, algorithm: p.algorithm)
                if expected.withUnsafeBufferPointer({ ConstantTime.equal($0, code) }) {
                    if counter >= next {
                        if accepted == nil {
                            var updated = record
                            updated.parameters.counter = counter &+ 1
                            accepted = updated
                        }
                    } else {
                        replay = true
                    }
                }
                counter &+= 1
            }
        }
        if let accepted { return .accept(accepted) }
        return replay ? .replay : .none
    }

    /// Conditional update: only moves the step/counter forward, so even a second writer that
    /// somehow bypassed the transaction could not accept the same code.
    private func recordAcceptance(_ record: TokenRecord, now: Int64) throws(StoreError) {
        switch record.parameters.kind {
        case .totp:
            try db.prepare("UPDATE tokens SET last_step = ?, last_used = ? WHERE serial = ? AND last_step < ?")
                .bind(.integer(record.lastStep), .integer(now), .text(record.serial), .integer(record.lastStep)).run()
        case .hotp:
            let counter = Int64(bitPattern: record.parameters.counter)
            try db.prepare("UPDATE tokens SET counter = ?, last_used = ? WHERE serial = ? AND counter < ?")
                .bind(.integer(counter), .integer(now), .text(record.serial), .integer(counter)).run()
        }
        guard db.changes == 1 else { throw StoreError(.database, "token \(record.serial) changed during verification; try again") }
        try db.prepare("DELETE FROM users WHERE name = ?").bind(.text(record.user)).run()
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
