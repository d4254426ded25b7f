/// What the engine decides on: the rows a backend reads inside its transaction, under the
/// per-user serialisation described on `VerificationEngine`.
public struct VerifySnapshot: Sendable {
    /// The failure row of the failure key as read; `UserState.clear` when there is no row.
    public var failures: UserState
    /// The user's active tokens (state 'active'), ordered by creation time, then serial: the
    /// order in which tokens are tried and which one a note names. Rows that do not decode
    /// (`TokenRecord(row:)` nil) are left out.
    public var tokens: [TokenSnapshot]
    /// The user's unused recovery codes.
    public var recoveryCodes: [RecoveryCodeRow]

    /// `tokens` or `recoveryCodes` may be left empty when `VerificationEngine.readsRecoveryCodes`
    /// says the engine will not look at them.
    public init(failures: UserState, tokens: [TokenSnapshot] = [], recoveryCodes: [RecoveryCodeRow] = []) {
        self.failures = failures
        self.tokens = tokens
        self.recoveryCodes = recoveryCodes
    }
}

/// One active token as read for verification.
public struct TokenSnapshot: Sendable {
    public var record: TokenRecord
    /// The seed as `SeedSealing.seal` left it; the engine opens it with the data key.
    public var sealedSeed: [UInt8]
    /// The stored `SlowHash` record of the PIN; empty when none is set.
    public var pinHash: [UInt8]

    public init(record: TokenRecord, sealedSeed: [UInt8], pinHash: [UInt8]) {
        self.record = record
        self.sealedSeed = sealedSeed
        self.pinHash = pinHash
    }
}

/// One unused recovery code as stored: its id (first group) and slow hash.
public struct RecoveryCodeRow: Sendable, Equatable {
    public var id: String
    public var hash: [UInt8]

    public init(id: String, hash: [UInt8]) {
        self.id = id
        self.hash = hash
    }
}
