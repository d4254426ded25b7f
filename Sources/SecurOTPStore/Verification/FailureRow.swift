/// The failure row of one key as the snapshot held it, and the writes that change it.
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
        let failures = state.failures < Int.max ? state.failures + 1 : state.failures // a damaged row must not trap
        let lockNow = policy.deny > 0 && failures >= policy.deny
        let lockedUntil = lockNow ? (policy.unlockTime > 0 ? now + policy.unlockTime : UserState.lockedUntilUnlocked) : 0
        return .init(result: VerifyResult(outcome: outcome, userHasTokens: hasTokens, failures: failures, lockedNow: lockNow, note: note),
                     writes: [.setFailures(key: key, expected: read, to: UserState(failures: failures, lockedUntil: lockedUntil), at: now)])
    }
}
