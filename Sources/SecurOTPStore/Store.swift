import CPosix
import SecurOTPCore

/// The local token store: SQLite for rows, the key file for sealing. Opened per use; every
/// read-validate-write happens in one BEGIN IMMEDIATE transaction.
public final class Store {
    public let paths: StorePaths
    /// The files this store was opened from, as checked at open time.
    public let identity: StoreIdentity
    let db: SQLiteDatabase
    let keys: KeyFile
    /// Decides every verification; this store reads its snapshots and applies its writes.
    public let engine: VerificationEngine

    init(paths: StorePaths, identity: StoreIdentity, db: SQLiteDatabase, keys: KeyFile) {
        self.paths = paths
        self.identity = identity
        self.db = db
        self.keys = keys
        engine = VerificationEngine(dataKey: keys.dataKey)
    }

    /// Opens the store, refusing files that others can read or write. `mode` says whether the
    /// caller may create or migrate it: only admin programs may (StoreOpenMode).
    public static func open(_ paths: StorePaths, _ mode: StoreOpenMode) throws(StoreError) -> Store {
        if mode == .create { try prepareForCreation(paths) }
        let identity = try StoreIdentity.checked(paths)
        let keys = try KeyFile.load(paths.keyFile)
        let db = try SQLiteDatabase(path: paths.database, create: false)
        // WAL + synchronous=FULL: a COMMIT is on disk (fsync of the WAL) before it returns,
        // so an accepted code is recorded before PAM_SUCCESS leaves the module.
        try db.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        // Each process's first connection re-reads the whole WAL, so it stays short; but every
        // restart costs a checkpoint with two fsyncs. 64 frames (about 260 KB, 32–64 logins):
        // in-process logins 10–15 % faster than with 16, whole-process runs no slower (bench/).
        try db.keepWriteAheadLog(restartAfterFrames: 64)
        try checkSchema(db, paths, mode)
        return Store(paths: paths, identity: identity, db: db, keys: keys)
    }

    /// The schema must be this build's: `asIs` takes nothing else; the admin modes migrate an
    /// older one. No mode adopts a database without a schema (user_version 0) — SQLite opens a
    /// zero-length file as an empty database, and making the schema in it would turn a failed
    /// restore or a full disk into a store in which nobody has a token.
    private static func checkSchema(_ db: SQLiteDatabase, _ paths: StorePaths, _ mode: StoreOpenMode) throws(StoreError) {
        let version = try db.userVersion()
        let current = Schema.currentVersion
        guard version != current else { return }
        let admin = paths.stateDirectory.map { "securotp --state-dir \($0)" } ?? "securotp"
        if version == 0 {
            throw StoreError(.corrupt, """
                database \(paths.database) has no securotp schema (it is empty or zero-length — a failed restore or a full disk?); \
                restore it from backup, or, if this is a new install, remove it and create the store with: \(admin) enroll USER
                """)
        }
        guard version > 0 else {
            throw StoreError(.corrupt, "database \(paths.database) has schema version \(version), which no securotp makes; restore it from backup")
        }
        guard version < current else {
            throw StoreError(.corrupt, "database \(paths.database) has schema version \(version), newer than this securotp (\(current)); upgrade securotp")
        }
        guard mode != .asIs else {
            throw StoreError(.corrupt, """
                database \(paths.database) has schema version \(version), older than this securotp (\(current)): it was not migrated \
                after an upgrade; migrate it with: \(admin) status
                """)
        }
        try Schema.migrate(db)
    }

    private static func prepareForCreation(_ paths: StorePaths) throws(StoreError) {
        umask(0o077)
        if let directory = paths.stateDirectory { try FileSecurity.makePrivateDirectory(directory) }
        for directory in [StorePaths.directory(of: paths.database), StorePaths.directory(of: paths.keyFile)] {
            try makeDirectories(directory)
        }
        if access(paths.keyFile, F_OK) != 0 {
            if access(paths.database, F_OK) == 0 {
                throw StoreError(.missing, "\(paths.keyFile) is missing but \(paths.database) exists; its seeds cannot be opened without the key — restore the key file from backup")
            }
            _ = try KeyFile.create(paths.keyFile)
        }
        if access(paths.database, F_OK) != 0 { try createDatabase(paths.database) }
    }

    /// Makes the database under a temporary name and links it into place only once its schema
    /// is complete: no process ever sees a store path holding a database without the schema
    /// (which every open refuses). Another command that created it first wins.
    private static func createDatabase(_ path: String) throws(StoreError) {
        let temporary = "\(path).new-\(getpid())"
        for suffix in ["", "-wal", "-shm"] { unlink(temporary + suffix) }
        defer { unlink(temporary) }
        do {
            let db = try SQLiteDatabase(path: temporary, create: true)
            try db.execute("PRAGMA journal_mode = WAL")
            try Schema.migrate(db)
        } // closing the only connection checkpoints the WAL into the file and removes it
        guard link(temporary, path) == 0 || securotp_errno() == EEXIST else {
            throw StoreError(.system, "cannot create \(path): \(String(cString: strerror(securotp_errno())))")
        }
        FileSecurity.syncDirectory(of: path)
    }

    /// mkdir -p with mode 0700 for new directories; existing ones are only checked.
    private static func makeDirectories(_ path: String) throws(StoreError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if access(prefix, F_OK) != 0, mkdir(prefix, 0o700) != 0, securotp_errno() != EEXIST {
                throw StoreError(.system, "cannot create directory \(prefix): \(String(cString: strerror(securotp_errno())))")
            }
        }
        try FileSecurity.check(path, .policy, isDirectory: true)
    }

    // MARK: tokens

    static let tokenColumns = """
        serial, user, kind, algorithm, digits, period, counter, last_step, nickname, issuer, state, created, last_used, \
        pin_mode, pin_hash IS NOT NULL, pin_length, pin_change_required, expires, drift, source, suite
        """
    /// The column after `tokenColumns` in a SELECT that appends one.
    static let tokenColumnCount: Int32 = 21

    /// The row under `tokenColumns`, checked like input by TokenRecord(row:): nil when damaged.
    static func token(from statement: SQLiteDatabase.Statement) -> TokenRecord? {
        var row = TokenRow()
        row.serial = statement.text(0)
        row.user = statement.text(1)
        row.kind = statement.text(2)
        row.algorithm = statement.text(3)
        row.digits = statement.integer(4)
        row.period = statement.integer(5)
        row.counter = statement.integer(6)
        row.lastStep = statement.integer(7)
        row.nickname = statement.text(8)
        row.issuer = statement.text(9)
        row.state = statement.text(10)
        row.created = statement.integer(11)
        row.lastUsed = statement.integer(12)
        row.pinMode = statement.text(13)
        row.hasPIN = statement.integer(14) != 0
        row.pinLength = statement.integer(15)
        row.pinChangeRequired = statement.integer(16) != 0
        row.expires = statement.integer(17)
        row.drift = statement.integer(18)
        row.source = statement.text(19)
        row.suite = statement.text(20)
        return TokenRecord(row: row)
    }

    /// Tokens of one user, or of everyone when `user` is nil, oldest first.
    public func tokens(user: String? = nil) throws(StoreError) -> [TokenRecord] {
        let statement: SQLiteDatabase.Statement
        if let user {
            statement = try db.prepare("SELECT \(Self.tokenColumns) FROM tokens WHERE user = ? ORDER BY created, serial")
            try statement.bind(.text(user))
        } else {
            statement = try db.prepare("SELECT \(Self.tokenColumns) FROM tokens ORDER BY user, created, serial")
        }
        var records: [TokenRecord] = []
        while try statement.step() {
            if let record = Self.token(from: statement) { records.append(record) }
        }
        return records
    }

    /// Adds a token with a fresh random serial; refuses more than `maxTokens` per user.
    public func enroll(user: String, parameters: OATHParameters, seed: SecretBytes, nickname: String,
                       issuer: String, maxTokens: Int, now: Int64) throws(StoreError) -> TokenRecord {
        let token = NewToken(kind: parameters.kind == .hotp ? .hotp : .totp, parameters: parameters, seed: seed,
                             nickname: nickname, issuer: issuer)
        return try add([token], user: user, maxTokens: maxTokens, now: now)[0]
    }

    /// Adds tokens for one user in one transaction: all of them or none (an import that fails
    /// half-way leaves nothing behind). Refuses more than `maxTokens` per user, a serial that
    /// is already enrolled, and expired tokens.
    public func add(_ tokens: [NewToken], user: String, maxTokens: Int, now: Int64) throws(StoreError) -> [TokenRecord] {
        try NewToken.check(tokens, user: user, now: now)
        return try db.immediateTransaction { () throws(StoreError) -> [TokenRecord] in
            let count = try db.prepare("SELECT count(*) FROM tokens WHERE user = ?")
            defer { count.reset() }
            try count.bind(.text(user))
            let existing = try count.step() ? Int(count.integer(0)) : 0
            guard existing + tokens.count <= maxTokens else {
                throw StoreError(.limit, "\(user) has \(existing) tokens and \(tokens.count) more would pass the limit of \(maxTokens); delete some with: securotp delete \(user) SERIAL, or raise max_tokens in \(paths.config)")
            }
            var records: [TokenRecord] = []
            for token in tokens {
                let serial: String
                if let given = token.serial { serial = try unusedSerial(given) } else { serial = try freshSerial() }
                let sealed = try SeedSealing.seal(token.seed, key: keys.dataKey, user: user, serial: serial)
                let record = token.record(serial: serial, user: user, created: now)
                let row = TokenRow(record)
                try db.prepare("""
                    INSERT INTO tokens (serial, user, kind, algorithm, digits, period, counter, sealed_seed, nickname, issuer,
                                        created, pin_mode, expires, source, suite)
                    VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
                    """)
                    .bind(.text(row.serial), .text(row.user), .text(row.kind), .text(row.algorithm), .integer(row.digits),
                          .integer(row.period), .integer(row.counter), .blob(sealed), .text(row.nickname), .text(row.issuer),
                          .integer(row.created), .text(row.pinMode), .integer(row.expires), .text(row.source), .text(row.suite))
                    .run()
                records.append(record)
            }
            return records
        }
    }

    /// An issuer's serial, refused when another token already has it.
    private func unusedSerial(_ serial: String) throws(StoreError) -> String {
        try TokenSerial.check(serial)
        let check = try db.prepare("SELECT user FROM tokens WHERE serial = ?")
        defer { check.reset() }
        try check.bind(.text(serial))
        if try check.step() {
            throw StoreError(.invalidInput, "token serial \(serial) is already enrolled (user \(check.text(0))); delete it first if it moves")
        }
        return serial
    }

    /// A random serial that is unique in this store.
    private func freshSerial() throws(StoreError) -> String {
        for _ in 0..<16 {
            guard let serial = TokenSerial.random() else { throw StoreError(.system, "no randomness available") }
            let check = try db.prepare("SELECT 1 FROM tokens WHERE serial = ?")
            defer { check.reset() }
            try check.bind(.text(serial))
            if try !check.step() { return serial }
        }
        throw StoreError(.system, "could not find a free serial number")
    }

    public func setNickname(user: String, serial: String, nickname: String) throws(StoreError) {
        try Self.validate(nickname: nickname)
        try db.prepare("UPDATE tokens SET nickname = ? WHERE user = ? AND serial = ?").bind(.text(nickname), .text(user), .text(serial)).run()
        guard db.changes == 1 else { throw StoreError.noSuchToken(user: user, serial: serial) }
    }

    public func delete(user: String, serial: String) throws(StoreError) {
        try db.prepare("DELETE FROM tokens WHERE user = ? AND serial = ?").bind(.text(user), .text(serial)).run()
        guard db.changes == 1 else { throw StoreError.noSuchToken(user: user, serial: serial) }
    }

    /// Removes all of a user's tokens and their failure/lock state; returns how many tokens went.
    public func reset(user: String) throws(StoreError) -> Int {
        try db.immediateTransaction { () throws(StoreError) -> Int in
            try db.prepare("DELETE FROM tokens WHERE user = ?").bind(.text(user)).run()
            let removed = db.changes
            try db.prepare("DELETE FROM users WHERE name = ?").bind(.text(user)).run()
            return removed
        }
    }

    /// The seed of one token, for the admin's own use (resync, tests); never used for display.
    public func seed(of record: TokenRecord) throws(StoreError) -> SecretBytes {
        let statement = try db.prepare("SELECT sealed_seed FROM tokens WHERE serial = ?")
        defer { statement.reset() }
        try statement.bind(.text(record.serial))
        guard try statement.step() else { throw StoreError.noSuchToken(user: record.user, serial: record.serial) }
        guard let seed = SeedSealing.open(statement.blob(0), key: keys.dataKey, user: record.user, serial: record.serial) else {
            throw StoreError(.corrupt, "sealed seed of token \(record.serial) does not open: it was altered, moved, or sealed under another key file")
        }
        return seed
    }

    // MARK: users

    public func userState(_ user: String) throws(StoreError) -> UserState {
        let statement = try db.prepare("SELECT failures, locked_until FROM users WHERE name = ?")
        defer { statement.reset() }
        try statement.bind(.text(user))
        guard try statement.step() else { return UserState(failures: 0, lockedUntil: 0) }
        return UserState(failures: Int(statement.integer(0)), lockedUntil: statement.integer(1))
    }

    /// Clears the failure count and lock; returns whether the user was locked at `now`.
    public func unlock(user: String, now: Int64) throws(StoreError) -> Bool {
        let wasLocked = try userState(user).isLocked(at: now)
        try db.prepare("DELETE FROM users WHERE name = ?").bind(.text(user)).run()
        return wasLocked
    }

    /// Users with a lock in force at `now`.
    public func lockedUsers(now: Int64) throws(StoreError) -> [String] {
        let statement = try db.prepare("SELECT name FROM users WHERE locked_until > ? ORDER BY name")
        try statement.bind(.integer(now))
        var names: [String] = []
        while try statement.step() { names.append(statement.text(0)) }
        return names
    }

    public func bindingID(user: String) -> String { BindingID.derive(hostSecret: keys.hostSecret, user: user) }

    // MARK: input rules

    /// See InputRules.validate(user:).
    public static func validate(user: String) throws(StoreError) { try InputRules.validate(user: user) }

    /// See InputRules.validate(nickname:).
    public static func validate(nickname: String) throws(StoreError) { try InputRules.validate(nickname: nickname) }
}

/// Who may create or migrate the store (issue 12 §3). A caller names its mode: nothing opens
/// the store in an admin mode by default.
public enum StoreOpenMode: Sendable, Equatable {
    /// The PAM module and `securotp doctor`: the store as it is. The database must exist and
    /// carry exactly this build's schema version; nothing is created or migrated.
    case asIs
    /// Admin programs (securotp, securotpd): an existing store, migrated when its schema is
    /// older. A database without a schema is refused like everywhere else.
    case migrate
    /// Admin commands that add to the store (enroll, import, host add, ...): as `migrate`, but
    /// a missing key file and database are made first.
    case create
}

/// What `Store.open` checked: the database's directory, the database and the key file.
/// A cached store is reused only while a fresh check gives the same identity.
public struct StoreIdentity: Equatable, Sendable {
    let directory: FileIdentity
    let database: FileIdentity
    let keyFile: FileIdentity

    /// Refuses files others can read or write (FileSecurity) and returns their identity.
    public static func checked(_ paths: StorePaths) throws(StoreError) -> StoreIdentity {
        do {
            let directory = try FileSecurity.check(StorePaths.directory(of: paths.database), .secret, isDirectory: true)
            let database = try FileSecurity.check(paths.database, .secret)
            return StoreIdentity(directory: directory, database: database.ignoringContentChanges,
                                 keyFile: try FileSecurity.check(paths.keyFile, .secret))
        } catch where error.code == .missing {
            throw StoreError(.missing, "\(error.message); create it by enrolling a token: securotp enroll USER")
        }
    }
}

extension FileIdentity {
    /// The database changes with every checkpoint; only its inode says it was replaced.
    var ignoringContentChanges: FileIdentity {
        var copy = self
        copy.size = 0
        copy.changed = 0
        copy.changedNanoseconds = 0
        return copy
    }
}

extension Store {
    /// The connection, for the validator daemon's own tables (credentials, audit, challenges)
    /// and for running several store operations in one transaction.
    public var database: SQLiteDatabase { db }

    /// See SQLiteDatabase.checkpoint.
    public func checkpoint() throws(StoreError) { try db.checkpoint() }

    public var schemaVersion: Int64 { (try? db.userVersion()) ?? 0 }
}

extension Store {
    /// A push device's offline secret sealed under the data key, bound to the user and device
    /// (docs/push.md, "Offline approval"); the `offline:` prefix keeps it apart from any token
    /// serial's associated data.
    public func sealDeviceSecret(_ secret: SecretBytes, user: String, device: String) throws(StoreError) -> [UInt8] {
        try Self.sealDeviceSecret(secret, key: keys.dataKey, user: user, device: device)
    }

    /// Nil when the blob was altered, moved to another device, or sealed under another key.
    public func openDeviceSecret(_ sealed: [UInt8], user: String, device: String) -> SecretBytes? {
        Self.openDeviceSecret(sealed, key: keys.dataKey, user: user, device: device)
    }

    /// The same under a data key held elsewhere (the PostgreSQL store): one binding for both stores.
    public static func sealDeviceSecret(_ secret: SecretBytes, key: SecretBytes, user: String, device: String) throws(StoreError) -> [UInt8] {
        try SeedSealing.seal(secret, key: key, user: user, serial: "offline:" + device)
    }

    public static func openDeviceSecret(_ sealed: [UInt8], key: SecretBytes, user: String, device: String) -> SecretBytes? {
        SeedSealing.open(sealed, key: key, user: user, serial: "offline:" + device)
    }
}
