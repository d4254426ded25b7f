import SecurOTPCore

extension Store {
    /// The row that counts failures of names NSS does not know: they cannot fill the users
    /// table, and cannot lock out real accounts (forward_pass runs before any password check).
    public static let unresolvedUsersKey = "(unresolved users)"

    /// Whether `user` has at least one active token.
    public func hasActiveTokens(user: String) throws(StoreError) -> Bool {
        let statement = try db.prepare("SELECT 1 FROM tokens WHERE user = ? AND state = 'active' LIMIT 1")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step()
    }

    /// Whether `user` holds a second factor, usable now or not (docs/security.md, "Holding a
    /// factor is not being able to use it now"): an active token, a FIDO credential in any state
    /// (a cloned one too), or a push device in any state but `pending` (active, blocked by its
    /// PIN; pushes blocked by `deny --fraud` or left out by a policy do not change it). `nullok`
    /// asks only this, never what a policy or a block leaves usable. The validator's preflight
    /// (`holds_factor`) asks the same of its store; PostgreSQL keeps the same rule in
    /// `PostgresTokenService.holdsFactor`.
    public func holdsFactor(user: String) throws(StoreError) -> Bool {
        let statement = try db.prepare("""
            SELECT 1 FROM tokens WHERE user = ? AND (state = 'active' OR kind = 'fido')
            UNION ALL SELECT 1 FROM devices WHERE user = ? AND state <> 'pending' LIMIT 1
            """)
        defer { statement.reset() }
        try statement.bind(.text(user), .text(user))
        return try statement.step()
    }

    /// Checks `input` against every active token of `user` (and the user's recovery codes) and
    /// records the result in one BEGIN IMMEDIATE transaction: an accepted step or counter is
    /// stored before this returns (WAL, synchronous=FULL), so the same code can never be
    /// accepted twice — not even by two logins at the same instant, which serialise on the
    /// write lock. The decision is VerificationEngine.verify's; see there for the arguments.
    public func verify(user: String, input: UnsafeBufferPointer<UInt8>, codeAtEnd: Bool,
                       policy: VerifyPolicy, now: Int64, failureKey: String? = nil, countsFailure: Bool = true,
                       challenge: String? = nil, charged: Bool = false) throws(StoreError) -> VerifyResult {
        try db.immediateTransaction { () throws(StoreError) -> VerifyResult in
            // Only the part of the snapshot the engine will read: one indexed query per login.
            let recovery = VerificationEngine.readsRecoveryCodes(input: input, codeAtEnd: codeAtEnd)
            let snapshot = VerifySnapshot(failures: try userState(failureKey ?? user),
                                          tokens: recovery ? [] : try activeTokens(user: user),
                                          recoveryCodes: recovery ? try unusedRecoveryCodes(user: user) : [])
            let decision = try engine.verify(snapshot, user: user, input: input, codeAtEnd: codeAtEnd, policy: policy, now: now,
                                             failureKey: failureKey, countsFailure: countsFailure, challenge: challenge,
                                             charged: charged)
            try apply(decision.writes)
            return decision.result
        }
    }

    /// Second half of the next-tokencode dialogue (see VerificationEngine.verifyNextCode).
    public func verifyNextCode(user: String, serial: String, position: Int64, input: UnsafeBufferPointer<UInt8>,
                               policy: VerifyPolicy, now: Int64) throws(StoreError) -> VerifyResult {
        try db.immediateTransaction { () throws(StoreError) -> VerifyResult in
            let snapshot = VerifySnapshot(failures: try userState(user), tokens: try activeTokens(user: user))
            let decision = try engine.verifyNextCode(snapshot, user: user, serial: serial, position: position, input: input,
                                                     policy: policy, now: now)
            try apply(decision.writes)
            return decision.result
        }
    }

    /// Before the prompt of a user with a usable OCRA token: a fresh challenge, with this
    /// attempt charged on the user's failure row and on disk before the challenge is shown
    /// (VerificationEngine.issueChallenge). Nil (nothing written) for everyone else.
    public func issueChallenge(user: String, policy: VerifyPolicy, now: Int64) throws(StoreError) -> ChallengeIssue? {
        // Most users have no OCRA token: one indexed lookup, no transaction.
        guard try ocraSuite(user: user, now: now) != nil else { return nil }
        return try db.immediateTransaction { () throws(StoreError) -> ChallengeIssue? in
            let snapshot = VerifySnapshot(failures: try userState(user), tokens: try activeTokens(user: user))
            guard let decision = try engine.issueChallenge(snapshot, user: user, policy: policy, now: now) else { return nil }
            try apply(decision.writes)
            return decision.result
        }
    }

    /// The OCRA suite of the user's first active OCRA token that may answer a login, if any:
    /// the login shows a challenge in that suite's question format
    /// (VerificationEngine.challengeSuite's rule).
    public func ocraSuite(user: String, now: Int64) throws(StoreError) -> OCRASuite? {
        // One indexed lookup on every login's path; most users have no OCRA token.
        let statement = try db.prepare("""
            SELECT suite FROM tokens WHERE user = ? AND kind = 'ocra' AND state = 'active' AND (expires = 0 OR expires > ?)
            ORDER BY created, serial
            """)
        defer { statement.reset() }
        try statement.bind(.text(user), .integer(now))
        while try statement.step() {
            if let suite = try? OCRASuite(statement.text(0)), suite.isSafeAtLogin { return suite }
        }
        return nil
    }

    // MARK: snapshot

    /// The user's active tokens in the engine's order, with sealed seeds and PIN hashes.
    public func activeTokens(user: String) throws(StoreError) -> [TokenSnapshot] {
        let statement = try db.prepare("""
            SELECT \(Self.tokenColumns), sealed_seed, pin_hash FROM tokens
            WHERE user = ? AND state = 'active' ORDER BY created, serial
            """)
        try statement.bind(.text(user))
        var tokens: [TokenSnapshot] = []
        while try statement.step() {
            guard let record = Self.token(from: statement) else { continue }
            tokens.append(TokenSnapshot(record: record, sealedSeed: statement.blob(Self.tokenColumnCount),
                                        pinHash: statement.blob(Self.tokenColumnCount + 1)))
        }
        return tokens
    }

    public func unusedRecoveryCodes(user: String) throws(StoreError) -> [RecoveryCodeRow] {
        let statement = try db.prepare("SELECT id, hash FROM recovery_codes WHERE user = ? AND used = 0 ORDER BY id")
        try statement.bind(.text(user))
        var codes: [RecoveryCodeRow] = []
        while try statement.step() { codes.append(RecoveryCodeRow(id: statement.text(0), hash: statement.blob(1))) }
        return codes
    }
}
