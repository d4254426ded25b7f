import SecurOTPCore
import SecurOTPStore

/// HostVerification's storage on the SQLite store: the user's section is a BEGIN IMMEDIATE
/// transaction (a savepoint of the store thread's group commit, StoreExecutor), so every
/// login on this machine and every validator call serialise on the write lock.
struct SQLiteVerificationStorage: VerificationStorage {
    let store: Store
    let tables: AccessTables

    func serialised<R>(user: String, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try store.database.immediateTransaction(body)
    }

    func failureKey(user: String) throws(StoreError) -> String? {
        if try store.hasActiveTokens(user: user) { return nil }
        if try store.remainingRecoveryCodes(user: user) > 0 { return nil }
        return Store.unresolvedUsersKey
    }

    func snapshot(user: String, failureKey: String?, rows: SnapshotRows) throws(StoreError) -> VerifySnapshot {
        let failures = try store.userState(failureKey ?? user)
        switch rows {
        case .tokens: return VerifySnapshot(failures: failures, tokens: try store.activeTokens(user: user))
        case .recoveryCodes: return VerifySnapshot(failures: failures, recoveryCodes: try store.unusedRecoveryCodes(user: user))
        }
    }

    func takeChallenge(id: String, user: String, host: String, now: Int64) throws(StoreError) -> PendingChallenge? {
        try tables.take(id: id, user: user, host: host, now: now)
    }

    func token(user: String, serial: String) throws(StoreError) -> TokenRecord? {
        try store.tokens(user: user).first { $0.serial == serial }
    }

    func reserve(host: String, user: String, withdrawing used: [OfflineUsage]) throws(StoreError) -> [OfflineReservation] {
        try tables.withdraw(host: host, user: user, usage: used)
        return try tables.reservations(host: host, user: user)
    }

    func apply(_ changes: HostChanges, host: String, user: String) throws(StoreError) {
        if let consumed = changes.consumed { try tables.consume(host: host, consumed.reservation, expectedFirst: consumed.expectedFirst) }
        if let refill = changes.refill { try tables.save(host: host, user: user, refill) }
        try store.apply(changes.writes)
        if let challenge = changes.challenge { try tables.insert(challenge) }
        if let audit = changes.audit { try tables.append(audit) }
    }
}
