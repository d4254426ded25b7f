import SecurOTPCore

/// One change the engine asks a backend to make, in the transaction it read the snapshot in.
/// Each write is conditional on what the snapshot held, and must change exactly one row; a
/// write that changes none means another writer got there first: roll the whole transaction
/// back and report `conflict` (the attempt is then neither accepted nor counted).
///
/// A failure row that does not exist and one holding 0 failures without a lock are the same
/// state, `UserState.clear`.
public enum StateWrite: Sendable, Equatable {
    /// Time-based token (TOTP, SecurID, time-based OCRA): last_step `from` → `to` with the
    /// drift and last_used given, only while last_step is still `from` (and `to` > `from`).
    case advanceStep(serial: String, from: Int64, to: Int64, drift: Int64, lastUsed: Int64)
    /// Counter token (HOTP, counter-based OCRA): counter `from` → `to`, only while the counter
    /// is still `from` (and `to` > `from`).
    case advanceCounter(serial: String, from: Int64, to: Int64, lastUsed: Int64)
    /// Challenge-only OCRA: only last_used changes. The verifier's single-use challenge,
    /// issued as a counted attempt from a space too large to wait for a repeat in, makes the
    /// response single-use; the token only has to still exist.
    case markUsed(serial: String, lastUsed: Int64)
    /// Marks recovery code (`user`, `id`) used at `usedAt`, only while it is still unused.
    case spendRecoveryCode(user: String, id: String, usedAt: Int64)
    /// Failure row of `key` → `to`, last failure at `at`, only while it still holds `expected`
    /// (`expected` `.clear`: insert the row, or overwrite a row that holds `.clear`).
    case setFailures(key: String, expected: UserState, to: UserState, at: Int64)
    /// Deletes the failure row of `key`, only while it still holds `expected` (never `.clear`:
    /// a missing row needs no write).
    case clearFailures(key: String, expected: UserState)
    /// PIN writes of token (`user`, `serial`); they only need the token to exist.
    /// Sets the PIN hash and mode and ends a pending PIN change.
    case setPIN(user: String, serial: String, mode: PINMode, hash: [UInt8], length: Int)
    /// Removes the PIN: mode none, no hash, length 0, no pending change.
    case clearPIN(user: String, serial: String)
    /// Sets the PIN mode and asks for a new PIN at the next login.
    case requirePIN(user: String, serial: String, mode: PINMode)

    /// What to report when this write changed no row.
    public var conflict: StoreError {
        switch self {
        case .advanceStep(let serial, _, _, _, _), .advanceCounter(let serial, _, _, _), .markUsed(let serial, _):
            StoreError(.database, "token \(serial) changed during verification; try again")
        case .spendRecoveryCode(let user, _, _):
            StoreError(.database, "recovery codes of \(user) changed during verification; try again")
        case .setFailures(let key, _, _, _), .clearFailures(let key, _):
            StoreError(.database, "failure count of \(key) changed during verification; try again")
        case .setPIN(let user, let serial, _, _, _), .clearPIN(let user, let serial), .requirePIN(let user, let serial, _):
            StoreError.noSuchToken(user: user, serial: serial)
        }
    }
}
