/// The failure row of one key as the snapshot held it, and the writes that change it.
///
/// Every attempt is counted once, when it is made, whatever follows it. An attempt that opens
/// a dialogue (a code in the resync band, next code required, an OCRA challenge shown) is
/// *charged*: counted at once, before the user can answer, so that abandoning the dialogue
/// (cancel, time-out, a killed connection) leaves it counted. The dialogue's answer then
/// settles the charge: right clears the row, wrong keeps the count and locks at `deny`.
/// docs/security.md, "Every attempt counts".
struct FailureRow {
    let key: String
    let read: UserState

    /// After an acceptance: the write that clears the row (none when there is no row).
    var cleared: [StateWrite] { read == .clear ? [] : [.clearFailures(key: key, expected: read)] }

    /// A miss: one more failure on top of `state` (the row, or `.clear` once a lock ran out),
    /// locking the user at `policy.deny`. Not counted: the result alone, no write.
    func recordFailure(_ state: UserState, _ policy: VerifyPolicy, _ now: Int64, outcome: VerifyOutcome, hasTokens: Bool,
                       note: String, counted: Bool = true) -> VerificationEngine.Decision<VerifyResult> {
        guard counted else {
            return .init(result: VerifyResult(outcome: outcome, userHasTokens: hasTokens, failures: state.failures, lockedNow: false, note: note),
                         writes: [])
        }
        let next = Lockout.afterFailure(state, deny: policy.deny, unlockTime: policy.unlockTime, now: now)
        return .init(result: VerifyResult(outcome: outcome, userHasTokens: hasTokens, failures: next.failures,
                                          lockedNow: next.lockedUntil != 0, note: note),
                     writes: [.setFailures(key: key, expected: read, to: next, at: now)])
    }

    /// The miss of a charged attempt: its failure was counted when it was charged, so the count
    /// stays; the user is locked if it has reached `policy.deny`. Always one write, like any miss.
    func settleCharged(_ state: UserState, _ policy: VerifyPolicy, _ now: Int64, outcome: VerifyOutcome, hasTokens: Bool,
                       note: String) -> VerificationEngine.Decision<VerifyResult> {
        settle(state.failures, policy, now, outcome: outcome, hasTokens: hasTokens, note: note)
    }

    /// Counts an attempt that opens a dialogue, before the user answers. It never locks by
    /// itself — the answer may still be right — but a count that reached `deny` with no answer
    /// locks at the next attempt (`staleLock`).
    func charge(_ state: UserState, _ now: Int64) -> (failures: Int, write: StateWrite) {
        let failures = Lockout.oneMore(state.failures)
        return (failures, .setFailures(key: key, expected: read, to: UserState(failures: failures, lockedUntil: 0), at: now))
    }

    /// Charged attempts that were abandoned can leave the count at `deny` without a lock: the
    /// next attempt locks instead of being checked.
    func staleLock(_ state: UserState, _ policy: VerifyPolicy, _ now: Int64) -> VerificationEngine.Decision<VerifyResult>? {
        guard policy.deny > 0, state.failures >= policy.deny else { return nil }
        return settle(state.failures, policy, now, outcome: .locked, hasTokens: true, note: "abandoned dialogues reached the failure limit")
    }

    /// While locked nothing is checked, but the attempt is counted and written like any miss,
    /// so that neither time nor disk activity tells a locked name apart. (A write of the same
    /// values would not do: SQLite leaves an unchanged row's page clean, and commits without
    /// an fsync.) The lock itself does not move (Lockout.afterFailure).
    func whileLocked(_ policy: VerifyPolicy, _ now: Int64) -> VerificationEngine.Decision<VerifyResult> {
        let next = Lockout.afterFailure(read, deny: policy.deny, unlockTime: policy.unlockTime, now: now)
        return .init(result: VerifyResult(outcome: .locked, userHasTokens: true, failures: next.failures, lockedNow: false),
                     writes: [.setFailures(key: key, expected: read, to: next, at: now)])
    }

    private func settle(_ failures: Int, _ policy: VerifyPolicy, _ now: Int64, outcome: VerifyOutcome, hasTokens: Bool,
                        note: String) -> VerificationEngine.Decision<VerifyResult> {
        let lockedUntil = Lockout.lockedUntil(failures: failures, deny: policy.deny, unlockTime: policy.unlockTime, now: now)
        let lockNow = lockedUntil != 0
        return .init(result: VerifyResult(outcome: outcome, userHasTokens: hasTokens, failures: failures, lockedNow: lockNow, note: note),
                     writes: [.setFailures(key: key, expected: read, to: UserState(failures: failures, lockedUntil: lockedUntil), at: now)])
    }
}

/// The failure and lockout rule, once for every way in (docs/security.md "Every attempt counts"):
/// codes (FailureRow), device approvals (push: deny, wrong number, a refused signature), FIDO
/// assertions, local and on the validator, and a host's offline codes (OfflineCache).
public enum Lockout {
    /// The row after one more failure: a lock that ran out starts the count again; a lock in
    /// force does not move, but the attempt still counts; `deny` failures in a row lock.
    public static func afterFailure(_ read: UserState, deny: Int, unlockTime: Int64, now: Int64) -> UserState {
        if read.isLocked(at: now) { return UserState(failures: oneMore(read.failures), lockedUntil: read.lockedUntil) }
        let failures = oneMore(read.lockedUntil != 0 ? 0 : read.failures)
        return UserState(failures: failures, lockedUntil: lockedUntil(failures: failures, deny: deny, unlockTime: unlockTime, now: now))
    }

    /// Whether an acceptance clears the row: a count, or a lock that ran out, goes; a lock in
    /// force stays — only unlock_time or an admin (`securotp unlock`) lifts it.
    public static func successClears(_ read: UserState, now: Int64) -> Bool { read != .clear && !read.isLocked(at: now) }

    /// One more failure; a damaged count at the maximum must not trap.
    public static func oneMore(_ failures: Int) -> Int { failures < Int.max ? failures + 1 : failures }

    /// Until when `failures` in a row lock: 0 (not locked) below `deny`, or always when `deny`
    /// is 0; otherwise `unlockTime` seconds from `now`, or until lifted
    /// (`UserState.lockedUntilUnlocked`) when `unlockTime` is 0.
    public static func lockedUntil(failures: Int, deny: Int, unlockTime: Int64, now: Int64) -> Int64 {
        guard deny > 0, failures >= deny else { return 0 }
        return unlockTime > 0 ? now + unlockTime : UserState.lockedUntilUnlocked
    }
}
