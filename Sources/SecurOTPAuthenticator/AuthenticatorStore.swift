import Glibc
import SecurOTPCore
import SecurOTPStore

/// The user's own token store: a directory only they can reach, holding a random key file and
/// an SQLite database whose seeds are sealed (AES-256-GCM, SeedSealing) under a key derived
/// from that file, the machine ID and the uid (DeviceKeys). A sealed constant in the database
/// (the key check) tells at open time whether the keys are right, so a store copied to another
/// machine or user is refused with a clear message, never turned into wrong codes.
public final class AuthenticatorStore {
    public let paths: AuthenticatorPaths
    public let identity: DeviceIdentity
    let db: SQLiteDatabase
    let keys: DeviceKeys

    /// This store's binding ID for its user on this machine (24 lowercase hex digits): give it
    /// to an issuer that binds SecurID tokens to a device. Changes only with `reset`.
    public var bindingID: String { keys.bindingID }

    private init(paths: AuthenticatorPaths, identity: DeviceIdentity, db: SQLiteDatabase, keys: DeviceKeys) {
        self.paths = paths
        self.identity = identity
        self.db = db
        self.keys = keys
    }

    /// The owner every seed's associated data names (with its serial): rows copied into another
    /// user's store, or moved to another serial, do not open.
    var sealingOwner: String { "authenticator:\(identity.uid)" }

    static let keyCheckPlaintext = Array("securotp-authenticator-key-check-v1".utf8)

    /// True when the directory holds a store (a key file or a database).
    public static func exists(_ paths: AuthenticatorPaths) -> Bool {
        var info = stat()
        return lstat(paths.keyFile, &info) == 0 || lstat(paths.database, &info) == 0
    }

    /// Opens the store, checking owner and modes of the directory and both files and that the
    /// keys derived here open its key check. With `create`, makes the directory, the key file
    /// and the database first where they are missing.
    public static func open(_ paths: AuthenticatorPaths, identity: DeviceIdentity, create: Bool,
                            now: Int64) throws(AuthenticatorError) -> AuthenticatorStore {
        umask(0o077)
        do {
            if create { try PrivateFiles.makeDirectory(paths.directory) } else { try PrivateFiles.check(paths.directory, .directory) }
        } catch where error.code == .missing {
            throw noStore(paths)
        }
        let keyFile: AuthenticatorKeyFile
        if isPresent(paths.keyFile) {
            keyFile = try AuthenticatorKeyFile.load(paths.keyFile)
        } else if isPresent(paths.database) {
            throw AuthenticatorError(.missing, "\(paths.keyFile) is missing but \(paths.database) exists; its tokens cannot be opened without it: "
                + "restore the key file from a backup, or start over with: securotp-authenticator reset")
        } else if create {
            keyFile = try AuthenticatorKeyFile.create(paths.keyFile, replace: false)
        } else {
            throw noStore(paths)
        }

        if !isPresent(paths.database) {
            guard create else { throw noStore(paths) }
            try translating { () throws(StoreError) in _ = try SQLiteDatabase(path: paths.database, create: true) }
        }
        try PrivateFiles.check(paths.database, .file)
        // A journal left by a crash is replayed into the database: it must be as private.
        if isPresent(paths.journal) { try PrivateFiles.check(paths.journal, .file) }

        let db = try translating { () throws(StoreError) -> SQLiteDatabase in
            let db = try SQLiteDatabase(path: paths.database, create: false)
            // FULL: a moved HOTP counter is on disk before its code is shown. secure_delete:
            // deleted rows (sealed seeds) are overwritten in the file, not just unlinked.
            try db.execute("PRAGMA synchronous = FULL; PRAGMA secure_delete = ON")
            try AuthenticatorSchema.migrate(db)
            return db
        }
        let store = AuthenticatorStore(paths: paths, identity: identity, db: db, keys: DeviceKeys(secret: keyFile.secret, identity: identity))
        try store.claimOrVerify(now: now)
        return store
    }

    /// Deletes every token and makes a new key file, and so a new binding ID. Works on a store
    /// that no longer opens here (copied from elsewhere, key file lost), as long as the
    /// directory is the user's own. Returns the number of tokens removed (nil when the old
    /// database could not be counted) and the new, empty store.
    public static func reset(_ paths: AuthenticatorPaths, identity: DeviceIdentity,
                             now: Int64) throws(AuthenticatorError) -> (removed: Int?, store: AuthenticatorStore) {
        umask(0o077)
        do {
            try PrivateFiles.check(paths.directory, .directory)
        } catch where error.code == .missing {
            return (0, try open(paths, identity: identity, create: true, now: now))
        }
        let removed = tokenCount(paths.database)
        // The old seeds are sealed under keys derived from the old key file: destroying it is
        // what makes them unreadable, so zero it before the directory entries go.
        PrivateFiles.overwriteWithZeros(paths.keyFile)
        for file in [paths.keyFile, paths.database, paths.journal, paths.database + "-wal", paths.database + "-shm"] {
            if unlink(file) != 0, errno != ENOENT {
                throw AuthenticatorError(.system, "cannot remove \(file): \(String(cString: strerror(errno)))")
            }
        }
        return (removed, try open(paths, identity: identity, create: true, now: now))
    }

    // MARK: opening

    private static func isPresent(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    private static func noStore(_ paths: AuthenticatorPaths) -> AuthenticatorError {
        AuthenticatorError(.missing, "no tokens in \(paths.directory) yet; import one with: securotp-authenticator import SOURCE")
    }

    /// The database format this build reads and writes.
    public static var storeFormat: Int64 { AuthenticatorSchema.currentVersion }

    /// How many tokens the store holds, read without any key (so also for a store that does
    /// not open here); nil when there is none or it cannot be read.
    public static func tokenCount(_ paths: AuthenticatorPaths) -> Int? { tokenCount(paths.database) }

    private static func tokenCount(_ path: String) -> Int? {
        guard isPresent(path), (try? PrivateFiles.check(path, .file)) != nil,
              let db = try? SQLiteDatabase(path: path, create: false),
              let statement = try? db.prepare("SELECT count(*) FROM tokens"), (try? statement.step()) == true else { return nil }
        defer { statement.reset() }
        return Int(statement.integer(0))
    }

    /// A new database records who made it and a sealed key check; an existing one must open
    /// under the keys derived here.
    private func claimOrVerify(now: Int64) throws(AuthenticatorError) {
        let row = try translating { () throws(StoreError) -> (uid: Int64, machineTag: String, check: [UInt8])? in
            try db.immediateTransaction { () throws(StoreError) -> (uid: Int64, machineTag: String, check: [UInt8])? in
                let select = try db.prepare("SELECT uid, machine_tag, key_check FROM store WHERE id = 1")
                defer { select.reset() }
                if try select.step() { return (select.integer(0), select.text(1), select.blob(2)) }
                let check = try SeedSealing.seal(SecretBytes(copying: Self.keyCheckPlaintext), key: keys.dataKey, user: sealingOwner, serial: "key-check")
                try db.prepare("INSERT INTO store (id, uid, machine_tag, key_check, created) VALUES (1, ?, ?, ?, ?)")
                    .bind(.integer(Int64(identity.uid)), .text(keys.machineTag), .blob(check), .integer(now)).run()
                return nil
            }
        }
        guard let row else { return }
        if let opened = SeedSealing.open(row.check, key: keys.dataKey, user: sealingOwner, serial: "key-check"),
           opened.constantTimeEquals(SecretBytes(copying: Self.keyCheckPlaintext)) {
            return
        }
        let advice = "a copied store does not open elsewhere: import your tokens here again from their source, "
            + "or start over with: securotp-authenticator reset"
        if row.uid != Int64(identity.uid) {
            throw AuthenticatorError(.otherDevice, "\(paths.directory) was made for another user or machine (uid \(row.uid); you are uid \(identity.uid)); \(advice)")
        }
        if row.machineTag != keys.machineTag {
            throw AuthenticatorError(.otherDevice, "\(paths.directory) was made for another user or machine (its machine ID is not this machine's); \(advice)")
        }
        throw AuthenticatorError(.corrupt, "\(paths.keyFile) does not open \(paths.database) (the key file was replaced or the database altered); "
            + "restore both from the same backup, or start over with: securotp-authenticator reset")
    }

    // MARK: tokens

    static let columns = "serial, kind, algorithm, digits, period, counter, pin_mode, expires, nickname, issuer, account, source, created"

    /// All tokens, oldest first.
    public func tokens() throws(AuthenticatorError) -> [StoredToken] {
        try translating { () throws(StoreError) -> [StoredToken] in
            let statement = try db.prepare("SELECT \(Self.columns) FROM tokens ORDER BY created, serial")
            var tokens: [StoredToken] = []
            while try statement.step() { tokens.append(try Self.token(from: statement)) }
            return tokens
        }
    }

    public func token(serial: String) throws(AuthenticatorError) -> StoredToken {
        try translating { () throws(StoreError) -> StoredToken in try lookUp(serial) }
    }

    func lookUp(_ serial: String) throws(StoreError) -> StoredToken {
        let statement = try db.prepare("SELECT \(Self.columns) FROM tokens WHERE serial = ?")
        defer { statement.reset() }
        try statement.bind(.text(serial))
        guard try statement.step() else { throw StoreError(.notFound, Self.noSuchToken(serial)) }
        return try Self.token(from: statement)
    }

    static func noSuchToken(_ serial: String) -> String {
        "no token with serial \(serial); see: securotp-authenticator list"
    }

    /// Rows are checked like input: a damaged one is named, never trusted.
    private static func token(from row: SQLiteDatabase.Statement) throws(StoreError) -> StoredToken {
        let serial = row.text(0)
        guard let kind = StoredToken.Kind(rawValue: row.text(1)), let algorithm = HashAlgorithm(name: row.text(2)),
              let pinMode = PINMode(rawValue: row.text(6)),
              (1...10).contains(row.integer(3)), kind == .hotp || (1...300).contains(row.integer(4)), row.integer(5) >= 0 else {
            throw StoreError(.corrupt, "token \(serial) is damaged in the database; remove it with: securotp-authenticator delete \(serial)")
        }
        return StoredToken(serial: serial, kind: kind, algorithm: algorithm, digits: Int(row.integer(3)),
                           period: kind == .hotp ? 0 : Int(row.integer(4)), counter: UInt64(row.integer(5)),
                           pinMode: pinMode, expires: row.integer(7), nickname: row.text(8), issuer: row.text(9),
                           account: row.text(10), source: row.text(11), created: row.integer(12))
    }

    public func setNickname(serial: String, nickname: String) throws(AuthenticatorError) {
        try translating { () throws(StoreError) in
            try Store.validate(nickname: nickname)
            try db.prepare("UPDATE tokens SET nickname = ? WHERE serial = ?").bind(.text(nickname), .text(serial)).run()
            guard db.changes == 1 else { throw StoreError(.notFound, Self.noSuchToken(serial)) }
        }
    }

    public func delete(serial: String) throws(AuthenticatorError) {
        try translating { () throws(StoreError) in
            try db.prepare("DELETE FROM tokens WHERE serial = ?").bind(.text(serial)).run()
            guard db.changes == 1 else { throw StoreError(.notFound, Self.noSuchToken(serial)) }
        }
    }

    /// The seed of a token, opened under this store's data key.
    func seed(serial: String) throws(StoreError) -> SecretBytes {
        let statement = try db.prepare("SELECT sealed_seed FROM tokens WHERE serial = ?")
        defer { statement.reset() }
        try statement.bind(.text(serial))
        guard try statement.step() else { throw StoreError(.notFound, Self.noSuchToken(serial)) }
        guard let seed = SeedSealing.open(statement.blob(0), key: keys.dataKey, user: sealingOwner, serial: serial) else {
            throw StoreError(.corrupt, "the sealed seed of token \(serial) does not open: it was altered or moved from another token; "
                + "delete the token (securotp-authenticator delete \(serial)) and import it again")
        }
        return seed
    }
}
