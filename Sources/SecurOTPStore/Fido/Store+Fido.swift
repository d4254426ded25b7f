import SecurOTPCore

/// FIDO credentials are rows of `tokens` with kind `fido` (docs/fido.md, "Storage"): the
/// credential (`KH,PK,type,attributes`) sealed like a seed under the store key, so a public key
/// or attribute changed in the database does not open; the last accepted signature counter in
/// `counter`; the origin in `issuer`; `state` `cloned` once a counter did not increase. The
/// passcode engine reads no `fido` row (TokenRecord(row:) knows no such kind).
extension Store {
    static let fidoKind = "fido"

    /// Adds credentials for one user in one transaction: all or none. Refuses a credential the
    /// user already has (same key handle; a resident one: same public key) and more than
    /// `maxTokens` tokens in all.
    public func addFido(_ credentials: [FidoCredential], user: String, source: String, maxTokens: Int,
                        now: Int64) throws(StoreError) -> [FidoCredential] {
        try Self.validate(user: user)
        guard !credentials.isEmpty else { throw StoreError(.invalidInput, "no FIDO credential to add") }
        return try db.immediateTransaction { () throws(StoreError) -> [FidoCredential] in
            let count = try db.prepare("SELECT count(*) FROM tokens WHERE user = ?")
            defer { count.reset() }
            try count.bind(.text(user))
            let existing = try count.step() ? Int(count.integer(0)) : 0
            try Self.checkFidoAdd(credentials, user: user, existingTokens: existing, known: try fidoCredentials(user: user), maxTokens: maxTokens,
                                  limitWhere: " in \(paths.config)")
            var serials: [String] = []
            for _ in credentials { serials.append(try freshFidoSerial(besides: serials)) }
            serials = TokenSerial.ascending(serials)
            var added: [FidoCredential] = []
            for (given, serial) in zip(credentials, serials) {
                let credential = Self.newFido(given, serial: serial, source: source, now: now)
                let sealed = try Self.sealFido(credential, key: keys.dataKey, user: user)
                try db.prepare("""
                    INSERT INTO tokens (serial, user, kind, algorithm, digits, period, counter, sealed_seed, issuer, created, source, suite)
                    VALUES (?,?,?,?,0,0,0,?,?,?,?,?)
                    """)
                    .bind(.text(credential.serial), .text(user), .text(Self.fidoKind), .text(credential.type.rawValue), .blob(sealed),
                          .text(credential.origin), .integer(now), .text(source), .text(credential.attributes))
                    .run()
                added.append(credential)
            }
            return added
        }
    }

    /// `securotp import --all`: every user's credentials in one transaction, all or none (a
    /// duplicate or a limit for one user adds nothing for anyone). In the order given.
    public func addFido(byUser credentials: [(user: String, credentials: [FidoCredential])], source: String, maxTokens: Int,
                        now: Int64) throws(StoreError) -> [(user: String, credentials: [FidoCredential])] {
        try db.immediateTransaction { () throws(StoreError) -> [(user: String, credentials: [FidoCredential])] in
            var added: [(user: String, credentials: [FidoCredential])] = []
            for (user, list) in credentials {
                added.append((user, try addFido(list, user: user, source: source, maxTokens: maxTokens, now: now)))
            }
            return added
        }
    }

    private func freshFidoSerial(besides taken: [String]) throws(StoreError) -> String {
        for _ in 0..<16 {
            guard let serial = TokenSerial.random() else { throw StoreError(.system, "no randomness available") }
            if taken.contains(serial) { continue }
            let check = try db.prepare("SELECT 1 FROM tokens WHERE serial = ?")
            defer { check.reset() }
            try check.bind(.text(serial))
            if try !check.step() { return serial }
        }
        throw StoreError(.system, "could not find a free serial number")
    }

    /// A user's FIDO credentials, active and cloned, oldest first. A row whose sealed
    /// credential does not open (altered, moved, another key file) is left out: it can never
    /// log anyone in.
    public func fidoCredentials(user: String) throws(StoreError) -> [FidoCredential] {
        let statement = try db.prepare("""
            SELECT serial, counter, sealed_seed, issuer, state, created, last_used, source FROM tokens
            WHERE user = ? AND kind = 'fido' ORDER BY created, serial
            """)
        defer { statement.reset() }
        try statement.bind(.text(user))
        var credentials: [FidoCredential] = []
        while try statement.step() {
            guard let credential = Self.openFido(serial: statement.text(0), counter: statement.integer(1), sealed: statement.blob(2),
                                                 origin: statement.text(3), state: statement.text(4), created: statement.integer(5),
                                                 lastUsed: statement.integer(6), source: statement.text(7), user: user, key: keys.dataKey)
            else { continue }
            credentials.append(credential)
        }
        return credentials
    }

    /// Users with at least one FIDO credential, by name (for `securotp list`).
    public func fidoUsers() throws(StoreError) -> [String] {
        let statement = try db.prepare("SELECT DISTINCT user FROM tokens WHERE kind = 'fido' ORDER BY user")
        defer { statement.reset() }
        var users: [String] = []
        while try statement.step() { users.append(statement.text(0)) }
        return users
    }

    /// The user has an active token other than a FIDO credential (a code to fall back on).
    public func hasActivePasscodeTokens(user: String) throws(StoreError) -> Bool {
        let statement = try db.prepare("SELECT 1 FROM tokens WHERE user = ? AND state = 'active' AND kind <> 'fido' LIMIT 1")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step()
    }

    /// Records an accepted assertion: the counter moves from `from` (what the login read) to
    /// `to`, once. False when another login changed the row first (or it was marked cloned):
    /// of two logins racing with one key at most one is accepted, as with an HOTP counter.
    public func acceptFidoCounter(user: String, serial: String, from: UInt32, to: UInt32, now: Int64) throws(StoreError) -> Bool {
        try db.immediateTransaction { () throws(StoreError) -> Bool in
            try db.prepare("""
                UPDATE tokens SET counter = ?, last_used = ?
                WHERE user = ? AND serial = ? AND kind = 'fido' AND state = 'active' AND counter = ?
                """)
                .bind(.integer(Int64(to)), .integer(now), .text(user), .text(serial), .integer(Int64(from)))
                .run()
            return db.changes == 1
        }
    }

    /// A refused FIDO login (no touch, wrong PIN, bad signature, cloned key, lost race) counts
    /// like a wrong code (docs/security.md, "Every attempt counts"): one more failure on the
    /// user's row, locking at `policy.deny`. Returns the count and whether this failure locked.
    public func recordFidoFailure(user: String, policy: VerifyPolicy, now: Int64) throws(StoreError) -> (failures: Int, lockedNow: Bool) {
        try db.immediateTransaction { () throws(StoreError) -> (failures: Int, lockedNow: Bool) in
            let read = try userState(user)
            let next = Lockout.afterFailure(read, deny: policy.deny, unlockTime: policy.unlockTime, now: now)
            try apply(.setFailures(key: user, expected: read, to: next, at: now))
            return (next.failures, next.lockedUntil != 0)
        }
    }

    /// An accepted FIDO login clears the user's failure count, as an accepted code does (not a lock in force).
    public func clearFidoFailures(user: String, now: Int64) throws(StoreError) {
        let read = try userState(user)
        guard Lockout.successClears(read, now: now) else { return }
        try db.prepare("DELETE FROM users WHERE name = ? AND failures = ? AND locked_until = ?")
            .bind(.text(user), .integer(Int64(read.failures)), .integer(read.lockedUntil)).run()
    }

    /// Marks a credential whose counter went back: a cloned key. It is kept (listed, exported
    /// never) but no login uses it again; `securotp delete USER SERIAL` removes it.
    public func markFidoCloned(user: String, serial: String) throws(StoreError) {
        try db.prepare("UPDATE tokens SET state = 'cloned' WHERE user = ? AND serial = ? AND kind = 'fido'")
            .bind(.text(user), .text(serial)).run()
    }
}

/// The rules of FIDO rows that every store follows (the PostgreSQL store too): the store
/// only reads and writes the rows.
extension Store {
    /// Refuses adding `credentials` to a user holding `existingTokens` tokens, of which `known`
    /// are FIDO credentials: one the user already has (same key handle; a resident one: same
    /// public key), twice in the list, or more than `maxTokens` tokens in all. `limitWhere`
    /// says where max_tokens is set.
    public static func checkFidoAdd(_ credentials: [FidoCredential], user: String, existingTokens: Int, known: [FidoCredential],
                                    maxTokens: Int, limitWhere: String) throws(StoreError) {
        guard existingTokens + credentials.count <= maxTokens else {
            throw StoreError(.limit, "\(user) has \(existingTokens) tokens and \(credentials.count) more would pass the limit of \(maxTokens); delete some with: securotp delete \(user) SERIAL, or raise max_tokens\(limitWhere)")
        }
        var known = known
        for credential in credentials {
            guard !known.contains(where: { $0.isSameCredential(as: credential) }) else {
                let same = credential.resident ? "same resident credential's public key" : "same key handle"
                throw StoreError(.invalidInput, "\(user) already has this FIDO credential (\(same)); see: securotp fido export \(user)")
            }
            known.append(credential)
        }
    }

    /// A credential as it is first stored: its serial, counter 0, active.
    public static func newFido(_ credential: FidoCredential, serial: String, source: String, now: Int64) -> FidoCredential {
        var credential = credential
        credential.serial = serial
        credential.created = now
        credential.source = source
        credential.counter = 0
        credential.cloned = false
        return credential
    }

    /// The row's `sealed_seed`: the credential field sealed to user and serial.
    public static func sealFido(_ credential: FidoCredential, key: SecretBytes, user: String) throws(StoreError) -> [UInt8] {
        try SeedSealing.seal(SecretBytes(copying: Array(credential.u2fField.utf8)), key: key, user: user, serial: credential.serial)
    }

    /// The credential of a `fido` row; nil when the sealed credential does not open (altered,
    /// moved, another key file) or the counter is out of range: such a row logs no one in.
    public static func openFido(serial: String, counter: Int64, sealed: [UInt8], origin: String, state: String, created: Int64, lastUsed: Int64,
                                source: String, user: String, key: SecretBytes) -> FidoCredential? {
        guard (0...Int64(UInt32.max)).contains(counter), let payload = SeedSealing.open(sealed, key: key, user: user, serial: serial) else { return nil }
        let field = payload.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        guard var credential = FidoCredential.parse(field: Substring(field), origin: origin).credential else { return nil }
        credential.serial = serial
        credential.counter = UInt32(counter)
        credential.cloned = state != TokenRecord.active
        credential.created = created
        credential.lastUsed = lastUsed
        credential.source = source
        return credential
    }
}
