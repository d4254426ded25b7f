import SecurOTPCore

/// The verification logic of every backend, without storage: it decides on a snapshot of a
/// user's rows and returns the result with the writes that record it. The SQLite `Store` and
/// the daemon's PostgreSQL backend run the same engine, so they give the same outcomes.
///
/// Backend contract, for `verify`, `verifyNextCode` and `resync`:
///
/// 1. Open a transaction and serialise on the user (SQLite: `BEGIN IMMEDIATE`; PostgreSQL:
///    e.g. `pg_advisory_xact_lock` on a hash of the user name, taken before the first read).
/// 2. Read the snapshot in that transaction: the failure row of the failure key, the user's
///    active tokens in order, the user's unused recovery codes (see `VerifySnapshot` and
///    `readsRecoveryCodes`).
/// 3. Run the engine; if it throws, roll back and report the error.
/// 4. Apply `writes` in order, each as a conditional update (`StateWrite`); if one changes no
///    row, roll back and report its `conflict`: the attempt is not accepted.
/// 5. Commit durably (the commit is on disk, or on a synchronous standby) before reporting
///    `result`: an accepted code is recorded before the login succeeds.
///
/// Exactly-once acceptance rests on step 4, not on step 1: every acceptance moves a step or
/// counter forward only from the value the snapshot held (or spends a recovery code only
/// while unused), so of two transactions that decided on the same snapshot — two logins, or
/// two daemon nodes — at most one write succeeds and the other rolls back; failure counts are
/// guarded the same way, so what commits is what some serial order would have given. The
/// serialisation of step 1 makes such conflicts rare (no retries), and keeps exact the one
/// count no write guards: how many recovery codes are left, which two codes spent at once on
/// one snapshot would both report from before the other.
///
/// PIN changes (`setPIN`, `clearPIN`, `requirePIN`) are single writes on a token the backend
/// read; they need no transaction of their own.
///
/// PAM-safe: no Foundation, no concurrency, no traps on input; the seeds it opens are wiped
/// when the engine is done with them.
public struct VerificationEngine {
    let dataKey: SecretBytes

    /// `dataKey`: the key file's data key (`KeyFile.dataKey`), which opens the sealed seeds.
    public init(dataKey: SecretBytes) {
        self.dataKey = dataKey
    }

    /// What the engine decided: the result to report once `writes` are committed.
    public struct Decision<Result> {
        public let result: Result
        public let writes: [StateWrite]

        public init(result: Result, writes: [StateWrite]) {
            self.result = result
            self.writes = writes
        }
    }

    /// Whether `verify` treats `input` as a recovery code. If so it reads only the snapshot's
    /// failure row and `recoveryCodes`; otherwise only the failure row and `tokens`. A backend
    /// may leave out the part that will not be read.
    public static func readsRecoveryCodes(input: UnsafeBufferPointer<UInt8>, codeAtEnd: Bool) -> Bool {
        !codeAtEnd && RecoveryCodes.looksLikeCode(input)
    }

    /// The OCRA suite a login's challenge is drawn from: that of the first active, unexpired
    /// OCRA token in snapshot order whose suite parses and is safe to use at a login
    /// (`OCRASuite.isSafeAtLogin`; nil: the login shows no challenge). The SQLite store asks its
    /// database the same in one indexed query.
    public static func challengeSuite(among tokens: [TokenRecord], now: Int64) -> OCRASuite? {
        challengeToken(among: tokens, now: now)?.suite
    }

    static func challengeToken(among tokens: [TokenRecord], now: Int64) -> (serial: String, suite: OCRASuite)? {
        for record in tokens where record.kind.answersChallenges && record.isActive && !record.isExpired(at: now) {
            if let suite = try? OCRASuite(record.suite), suite.isSafeAtLogin { return (record.serial, suite) }
        }
        return nil
    }

    /// Checks `input` against every active token of `user` (and the user's recovery codes).
    ///
    /// With `codeAtEnd`, the code is the last `digits` characters of `input` (password+code).
    /// Users without tokens and unknown users are answered like users with a wrong code:
    /// the same HMAC work and the same failure write, so neither timing nor result tells them apart.
    /// A locked user is answered without a check, but with the same work and a write too.
    ///
    /// `failureKey` names the row failures are counted on (default: `user`); `countsFailure`
    /// false checks without counting a miss (try_first_pass).
    ///
    /// `challenge` is the OCRA challenge the login showed (OCRA tokens are skipped without one).
    /// `charged`: this attempt was counted already, when its challenge was issued
    /// (`issueChallenge`); a miss keeps that count instead of adding one (FailureRow).
    public func verify(_ snapshot: VerifySnapshot, user: String, input: UnsafeBufferPointer<UInt8>, codeAtEnd: Bool,
                       policy: VerifyPolicy, now: Int64, failureKey: String? = nil, countsFailure: Bool = true,
                       challenge: String? = nil, charged: Bool = false) throws(StoreError) -> Decision<VerifyResult> {
        let failures = FailureRow(key: failureKey ?? user, read: snapshot.failures)
        if failures.read.isLocked(at: now) {
            Decoy.work(input: input, codeAtEnd: codeAtEnd, policy: policy, dataKey: dataKey)
            return failures.whileLocked(policy, now)
        }
        // A lock that ran out starts the count again.
        let state = failures.read.lockedUntil != 0 ? UserState.clear : failures.read
        if !charged, let locked = failures.staleLock(state, policy, now) {
            Decoy.work(input: input, codeAtEnd: codeAtEnd, policy: policy, dataKey: dataKey)
            return locked
        }
        func miss(_ outcome: VerifyOutcome, hasTokens: Bool, note: String) -> Decision<VerifyResult> {
            guard charged, countsFailure else {
                return failures.recordFailure(state, policy, now, outcome: outcome, hasTokens: hasTokens, note: note, counted: countsFailure)
            }
            return failures.settleCharged(state, policy, now, outcome: outcome, hasTokens: hasTokens, note: note)
        }

        if Self.readsRecoveryCodes(input: input, codeAtEnd: codeAtEnd) {
            if let spend = try spendRecoveryCode(snapshot.recoveryCodes, user: user, input: input, now: now) {
                return Decision(result: VerifyResult(outcome: .acceptedRecoveryCode(remaining: snapshot.recoveryCodes.count - 1),
                                                     userHasTokens: true, failures: 0, lockedNow: false),
                                writes: [spend] + failures.cleared)
            }
            return miss(.rejected, hasTokens: true, note: "not a valid unused recovery code")
        }

        let candidates = snapshot.tokens
        var replayedSerial: String?
        var outsideWindow: (serial: String, position: Int64)?
        var searched = false
        var note = candidates.isEmpty ? "no active token" : "wrong code"
        for candidate in candidates {
            let record = candidate.record
            if record.isExpired(at: now) {
                note = "token \(record.serial) expired"
                continue
            }
            if record.kind.answersChallenges {
                guard challenge != nil else { continue }
                if case .ocra(let rules) = TokenCodes(record), let refusal = rules.refusalAtLogin {
                    note = "token \(record.serial): \(refusal)"
                    continue
                }
            }
            let seed = try openSeed(candidate.sealedSeed, record)
            searched = true
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
                if policy.nextCodeAfter > 0, state.failures >= policy.nextCodeAfter, !record.kind.answersChallenges {
                    return nextCodeDialogue(failures, state, now, serial: record.serial, position: position, charged: charged,
                                            countsFailure: countsFailure, note: "next code required after \(state.failures) failures")
                }
                let accept = try acceptance(record, position: position, now: now)
                if record.needsNewPIN {
                    return Decision(result: VerifyResult(outcome: .newPINRequired(serial: record.serial, pinMode: record.pinMode),
                                                         userHasTokens: true, failures: 0, lockedNow: false),
                                    writes: [accept] + failures.cleared)
                }
                return Decision(result: VerifyResult(outcome: .accepted(serial: record.serial, digits: codeAtEnd ? digits : passcode.count),
                                                     userHasTokens: true, failures: 0, lockedNow: false),
                                writes: [accept] + failures.cleared)
            case .wrongPIN:
                note = "right tokencode, wrong PIN (token \(record.serial))"
            case .none:
                break
            }
            // PINPad passcodes cost a slow PIN hash per candidate code: no wide search for them.
            if outsideWindow == nil, policy.resyncWindow > 0, pinMode != .addedByToken, !record.kind.answersChallenges,
               case .match(let position) = matcher.find(in: codes(record, seed: seed, around: now, policy: policy, resync: true)),
               isFresh(position, record) {
                outsideWindow = (record.serial, position)
            }
        }
        // A user with no token to search costs what a one-token user's wrong code costs.
        if !searched { Decoy.tokenWork(input: input, policy: policy, dataKey: dataKey) }
        if let outsideWindow, replayedSerial == nil {
            return nextCodeDialogue(failures, state, now, serial: outsideWindow.serial, position: outsideWindow.position, charged: charged,
                                    countsFailure: countsFailure, note: "code outside the window; asking for the next one")
        }
        let outcome: VerifyOutcome = replayedSerial.map { .replayed(serial: $0) } ?? .rejected
        return miss(outcome, hasTokens: !candidates.isEmpty, note: note)
    }

    /// A right code that needs the token's next code to settle it (resync band, or failures
    /// reached `nextCodeAfter`): counted now, so that a guess that lands here and is abandoned
    /// is not free; `verifyNextCode` settles the charge. An uncounted check (try_first_pass)
    /// opens no dialogue: the prompt that follows gets the real attempt.
    private func nextCodeDialogue(_ failures: FailureRow, _ state: UserState, _ now: Int64, serial: String, position: Int64,
                                  charged: Bool, countsFailure: Bool, note: String) -> Decision<VerifyResult> {
        guard countsFailure else {
            return Decision(result: VerifyResult(outcome: .rejected, userHasTokens: true, failures: state.failures, lockedNow: false,
                                                 note: note + " (not asked: uncounted check)"), writes: [])
        }
        let outcome = VerifyOutcome.nextCodeRequired(serial: serial, position: position)
        if charged {
            // Already counted when its challenge was issued.
            return Decision(result: VerifyResult(outcome: outcome, userHasTokens: true, failures: state.failures, lockedNow: false, note: note),
                            writes: [.setFailures(key: failures.key, expected: failures.read, to: state, at: now)])
        }
        let (count, write) = failures.charge(state, now)
        return Decision(result: VerifyResult(outcome: outcome, userHasTokens: true, failures: count, lockedNow: false, note: note),
                        writes: [write])
    }

    /// Before a login shows an OCRA challenge: the token whose suite the challenge is drawn from
    /// (the user's first usable OCRA token), with the write that charges this attempt
    /// (FailureRow) — so a login abandoned at the challenge counts like a wrong answer. The
    /// caller draws the challenge and remembers it: the module in local mode, the validator in
    /// remote mode (never the host). `.locked`: no challenge is
    /// issued (the caller shows a throwaway one, so the prompt looks the same). Nil when the
    /// user has no usable OCRA token (no challenge, no write).
    public func issueChallenge(_ snapshot: VerifySnapshot, user: String, policy: VerifyPolicy, now: Int64)
        throws(StoreError) -> Decision<ChallengeIssue>? {
        guard let token = Self.challengeToken(among: snapshot.tokens.map { $0.record }, now: now) else { return nil }
        let failures = FailureRow(key: user, read: snapshot.failures)
        if failures.read.isLocked(at: now) {
            return Decision(result: .locked(suite: token.suite), writes: failures.whileLocked(policy, now).writes)
        }
        let state = failures.read.lockedUntil != 0 ? UserState.clear : failures.read
        if let locked = failures.staleLock(state, policy, now) {
            return Decision(result: .locked(suite: token.suite), writes: locked.writes)
        }
        let (_, write) = failures.charge(state, now)
        return Decision(result: .issued(serial: token.serial, suite: token.suite), writes: [write])
    }

    /// The recovery code `input` names, if it is unused and right: the write that spends it.
    /// Always one slow hash, also when no unused code starts with the same group (then against
    /// a decoy record), so timing does not tell a guess whose first group matched.
    private func spendRecoveryCode(_ rows: [RecoveryCodeRow], user: String, input: UnsafeBufferPointer<UInt8>,
                                   now: Int64) throws(StoreError) -> StateWrite? {
        let code = input.map(RecoveryCodes.lowercased)
        let id = RecoveryCodes.id(of: code)
        let row = rows.first(where: { $0.id == id })
        let right = code.withUnsafeBufferPointer { SlowHash.verify($0, against: row?.hash ?? Decoy.slowHashRecord) }
        guard let row, right else { return nil }
        return .spendRecoveryCode(user: user, id: row.id, usedAt: now)
    }

    func openSeed(_ sealed: [UInt8], _ record: TokenRecord) throws(StoreError) -> SecretBytes {
        guard let seed = SeedSealing.open(sealed, key: dataKey, user: record.user, serial: record.serial) else {
            throw StoreError(.corrupt, "sealed seed of token \(record.serial) (user \(record.user)) does not open: altered, moved, or sealed under another key file")
        }
        return seed
    }
}
