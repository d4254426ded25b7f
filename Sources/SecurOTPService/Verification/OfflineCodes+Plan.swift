import SecurOTPCore
import SecurOTPStore

/// The validator's half of offline codes (VerificationEngine+Offline), the same for every
/// backend: a login on a host's reserved codes, and the refill after an accepted login.
public enum OfflinePlan {
    /// PBKDF2 iterations per offline code hash: ~4 ms each on the reference machine, so a
    /// stolen cache with its credential still costs seconds per code to search, and a host
    /// checks its ten codes in well under a second.
    public static let iterations = 20_000

    /// A login on one of the host's reserved codes: accepted (the reservation moves past it
    /// and the user's failures clear) unless the user is locked. Nil when the passcode is not
    /// one of them (the engine then decides as usual).
    public static func reserved(_ engine: VerificationEngine, _ snapshot: VerifySnapshot, reservations: [OfflineReservation],
                                input: UnsafeBufferPointer<UInt8>, codeAtEnd: Bool, failureKey: String, now: Int64)
        throws(StoreError) -> (result: VerifyResult, writes: [StateWrite], consumed: OfflineReservation)? {
        guard !reservations.isEmpty, !codeAtEnd, !snapshot.failures.isLocked(at: now),
              let (record, position) = try engine.matchReserved(snapshot.tokens, reservations, input: input, now: now),
              let reservation = reservations.first(where: { $0.serial == record.serial }) else { return nil }
        let writes: [StateWrite] = snapshot.failures == .clear ? [] : [.clearFailures(key: failureKey, expected: snapshot.failures)]
        return (VerifyResult(outcome: .accepted(serial: record.serial, digits: input.count), userHasTokens: true, failures: 0,
                             lockedNow: false, note: "reserved offline code"),
                writes, OfflineReservation(serial: reservation.serial, first: position + 1, last: reservation.last))
    }

    /// After an accepted login by a host with offline codes: what it holds next, the codes to
    /// send, and the counter write that keeps other hosts off them. `acceptedAt` is the
    /// position just accepted (for an engine acceptance: the counter write's target − 1).
    public static func refill(_ engine: VerificationEngine, token: TokenSnapshot, acceptedAt: Int64, counterNow: Int64,
                              previous: OfflineReservation?, count: Int, pepper: [UInt8], now: Int64)
        throws(StoreError) -> (reservation: OfflineReservation, codes: OfflineCodes, counterWrite: StateWrite?)? {
        guard VerificationEngine.offlineEligible(token.record),
              let plan = OfflineRefill.plan(accepted: acceptedAt, previous: previous, counter: counterNow, count: count, serial: token.record.serial)
        else { return nil }
        var hashes: [OfflineCodeHash] = []
        if let positions = plan.newPositions {
            hashes = try engine.offlineHashes(token, positions: positions, pepper: pepper, iterations: iterations)
        }
        let codes = OfflineCodes(serial: token.record.serial, digits: token.record.parameters.digits, iterations: iterations,
                                 firstValid: plan.reservation.first,
                                 codes: hashes.map { OfflineCode(counter: $0.counter, salt: Hex.encode($0.salt), hash: Hex.encode($0.hash)) })
        let counterWrite: StateWrite? = plan.counter > counterNow
            ? .advanceCounter(serial: token.record.serial, from: counterNow, to: plan.counter, lastUsed: now) : nil
        return (plan.reservation, codes, counterWrite)
    }

    /// The position an engine acceptance used on `serial`: from its counter write.
    public static func acceptedPosition(serial: String, in writes: [StateWrite]) -> Int64? {
        for write in writes {
            if case .advanceCounter(serial, _, let to, _) = write { return to - 1 }
        }
        return nil
    }
}
