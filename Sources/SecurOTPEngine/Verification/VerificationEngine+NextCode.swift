import SecurOTPCore

extension VerificationEngine {
    /// Second half of the next-tokencode dialogue: `input` must be the code that follows the
    /// one found at `position` on token `serial`. Accepting it stores the token's drift.
    /// Failures count on `user`'s own row (the snapshot's failure row must be that one).
    /// `position` comes back from a caller (a daemon's client): anything but what `verify`
    /// returned is refused like a wrong code. The attempt was charged when `verify` asked for
    /// the next code (FailureRow): a wrong or late answer keeps that count and locks at `deny`,
    /// a right one clears it.
    public func verifyNextCode(_ snapshot: VerifySnapshot, user: String, serial: String, position: Int64,
                               input: UnsafeBufferPointer<UInt8>, policy: VerifyPolicy, now: Int64) throws(StoreError) -> Decision<VerifyResult> {
        let failures = FailureRow(key: user, read: snapshot.failures)
        if failures.read.isLocked(at: now) {
            Decoy.work(input: input, codeAtEnd: false, policy: policy, dataKey: dataKey)
            return failures.whileLocked(policy, now)
        }
        let state = failures.read.lockedUntil != 0 ? UserState.clear : failures.read
        guard let candidate = snapshot.tokens.first(where: { $0.record.serial == serial }),
              !candidate.record.isExpired(at: now), position >= 0, position < Int64.max - 1 else {
            return failures.settleCharged(state, policy, now, outcome: .rejected, hasTokens: true, note: "token \(serial) gone during resync")
        }
        let record = candidate.record
        let seed = try openSeed(candidate.sealedSeed, record)
        let next = position + 1
        let pinMode = record.needsNewPIN && !record.hasPIN ? PINMode.none : record.pinMode
        let matcher = PasscodeMatcher(mode: pinMode, pinHash: candidate.pinHash, pinLength: record.pinLength, passcode: input)
        guard case .match = matcher.find(in: [(position: next, code: code(record, seed: seed, position: next))]), isFresh(next, record) else {
            return failures.settleCharged(state, policy, now, outcome: .rejected, hasTokens: true, note: "next code did not follow (token \(serial))")
        }
        let accept = try acceptance(record, position: next, now: now, learnDriftFrom: currentPosition(record, now: now))
        if record.needsNewPIN {
            return Decision(result: VerifyResult(outcome: .newPINRequired(serial: serial, pinMode: record.pinMode), userHasTokens: true,
                                                 failures: 0, lockedNow: false),
                            writes: [accept] + failures.cleared)
        }
        return Decision(result: VerifyResult(outcome: .accepted(serial: serial, digits: input.count), userHasTokens: true, failures: 0,
                                             lockedNow: false, note: "resynchronised"),
                        writes: [accept] + failures.cleared)
    }
}
