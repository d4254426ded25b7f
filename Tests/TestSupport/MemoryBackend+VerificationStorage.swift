import SecurOTPCore
import SecurOTPService
import SecurOTPEngine
import SecurOTPStore

/// The memory backend as the third storage of the host pipeline (HostVerification), beside
/// SQLite and PostgreSQL: its own reading of the VerificationStorage contract, no SQL.
extension MemoryBackend: VerificationStorage {
    /// A transaction: whatever `body` changed is undone when it throws.
    public func serialised<R>(user: String, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        let saved = rows
        do {
            return try body()
        } catch {
            rows = saved
            throw error
        }
    }

    public func failureKey(user: String) throws(StoreError) -> String? {
        let hasRecoveryCodes = (rows.recoveryCodes[user] ?? [:]).values.contains { $0.used == 0 }
        return activeTokens(user: user).isEmpty && !hasRecoveryCodes ? Store.unresolvedUsersKey : nil
    }

    public func snapshot(user: String, failureKey: String?, rows which: SnapshotRows) throws(StoreError) -> VerifySnapshot {
        let all = snapshot(user: user, failureKey: failureKey ?? user)
        switch which {
        case .tokens: return VerifySnapshot(failures: all.failures, tokens: all.tokens)
        case .recoveryCodes: return VerifySnapshot(failures: all.failures, recoveryCodes: all.recoveryCodes)
        }
    }

    public func takeChallenge(id: String, user: String, host: String, now: Int64) throws(StoreError) -> PendingChallenge? {
        guard let challenge = rows.challenges[id], challenge.user == user, challenge.host == host else { return nil }
        rows.challenges[id] = nil
        return challenge.expires > now ? challenge : nil
    }

    public func token(user: String, serial: String) throws(StoreError) -> TokenRecord? {
        try? record(user: user, serial: serial)
    }

    public func reserve(host: String, user: String, withdrawing used: [OfflineUsage]) throws(StoreError) -> [OfflineReservation] {
        for usage in used where rows.reservationUsers["\(host) \(usage.serial)"] == user {
            if let reservation = rows.reservations[host]?[usage.serial], reservation.first < usage.nextUnused {
                rows.reservations[host]?[usage.serial]?.first = usage.nextUnused
            }
        }
        return (rows.reservations[host] ?? [:])
            .filter { rows.reservationUsers["\(host) \($0.key)"] == user }
            .map(\.value)
            .sorted { $0.serial.utf8.lexicographicallyPrecedes($1.serial.utf8) }
    }

    public func apply(_ changes: HostChanges, host: String, user: String) throws(StoreError) {
        if let consumed = changes.consumed {
            guard rows.reservations[host]?[consumed.reservation.serial]?.first == consumed.expectedFirst else {
                throw StoreError(.database, "offline codes of token \(consumed.reservation.serial) changed during verification; try again")
            }
            rows.reservations[host]?[consumed.reservation.serial]?.first = consumed.reservation.first
        }
        if let refill = changes.refill {
            rows.reservations[host, default: [:]][refill.serial] = refill
            rows.reservationUsers["\(host) \(refill.serial)"] = user
        }
        try commit(changes.writes)
        if let challenge = changes.challenge { rows.challenges[challenge.id] = challenge }
        if let audit = changes.audit { rows.audit.append(audit) }
    }
}
