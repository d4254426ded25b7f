import CSQLite

/// A thin wrapper over the system libsqlite3: one connection, prepared statements, and
/// `BEGIN IMMEDIATE` transactions for read-validate-write (docs/design.md, "Storage and
/// exactly once").
public final class SQLiteDatabase {
    private let handle: OpaquePointer
    public let path: String
    /// Set by keepWriteAheadLog; read by the WAL hook while the connection lives.
    private let walPolicy: UnsafeMutablePointer<securotp_wal_policy>
    /// Prepared once per connection: a cached connection (StoreCache) then parses no SQL per login.
    private var statements: [String: Statement] = [:]

    public init(path: String, create: Bool) throws(StoreError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, securotp_sqlite_vfs())
        guard rc == SQLITE_OK, let db else {
            let reason = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw StoreError(.database, "cannot open database \(path): \(reason)")
        }
        handle = db
        self.path = path
        walPolicy = .allocate(capacity: 1)
        walPolicy.initialize(to: securotp_wal_policy(restart_frames: 0, restart_pending: 0))
        sqlite3_busy_timeout(db, 10_000)
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        statements.removeAll() // finalize before closing
        sqlite3_close_v2(handle)
        walPolicy.deallocate()
    }

    /// See securotp_sqlite_keep_wal: one in-place fsync per commit for short-lived connections.
    public func keepWriteAheadLog(restartAfterFrames frames: Int32) throws(StoreError) {
        walPolicy.pointee.restart_frames = frames
        guard securotp_sqlite_keep_wal(handle, walPolicy) == SQLITE_OK else { throw StoreError(.database, "database \(path): \(errorMessage)") }
    }

    /// For a long-lived writer (the validator's store thread), whose WAL another connection
    /// checkpoints in the background (PASSIVE, never blocking this one): a commit costs its WAL
    /// append and one fsync, not a copy of pages into the database and a second fsync
    /// (measured: 40–70 ms stalls with 400,000 users). But a PASSIVE checkpoint cannot start
    /// the WAL over while commits keep coming (it grew by 70 MB/s at 4,500 verifications/s),
    /// so past `frames` the writer restarts it itself; by then the background checkpoints have
    /// copied all but their last interval's frames, so the restart's copy is short.
    public func restartWriteAheadLogOnlyAfter(frames: Int32) {
        walPolicy.pointee.restart_frames = frames
    }

    public func execute(_ sql: String) throws(StoreError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let reason = message.map { String(cString: $0) } ?? errorMessage
            sqlite3_free(message)
            throw StoreError(.database, "database \(path): \(reason)")
        }
    }

    /// A prepared statement for `sql`, reused across calls. Callers read it to the end or
    /// call `reset()`, so no statement keeps a read snapshot open between operations.
    public func prepare(_ sql: String) throws(StoreError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil) == SQLITE_OK, let raw else {
            throw StoreError(.database, "database \(path): \(errorMessage)")
        }
        let statement = Statement(raw, path: path)
        statements[sql] = statement
        return statement
    }

    /// Open transactions: 0 outside, 1 in BEGIN IMMEDIATE, more in nested savepoints.
    private var transactionDepth = 0

    /// Runs `body` inside BEGIN IMMEDIATE … COMMIT: the write lock is taken before anything is
    /// read, so two logins racing with one code serialise here and the second sees the first's
    /// update. Rolls back when `body` throws.
    ///
    /// Inside another transaction it becomes a savepoint: the validator daemon runs several
    /// verifications in one transaction (one fsync for all: group commit) and an audit entry in
    /// the same transaction as the decision it records; each inner body still rolls back alone.
    public func immediateTransaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try immediateTransaction(body, databaseError: { $0 })
    }

    /// The same for a body with its own error type; failures of the database itself are
    /// turned into that type by `databaseError`.
    public func immediateTransaction<R, E: Error>(_ body: () throws(E) -> R, databaseError: (StoreError) -> E) throws(E) -> R {
        // Prepared once per connection like every other statement: a login's BEGIN and
        // COMMIT are not parsed again each time.
        func run(_ sql: String) throws(E) {
            do { try prepare(sql).run() } catch { throw databaseError(error) }
        }
        let outermost = transactionDepth == 0
        let savepoint = "nested\(transactionDepth)"
        if outermost { resetStatements() }
        try run(outermost ? "BEGIN IMMEDIATE" : "SAVEPOINT \(savepoint)")
        transactionDepth += 1
        let result: R
        do {
            result = try body()
            try run(outermost ? "COMMIT" : "RELEASE \(savepoint)")
        } catch {
            transactionDepth -= 1
            resetStatements()
            try? execute(outermost ? "ROLLBACK" : "ROLLBACK TO \(savepoint); RELEASE \(savepoint)")
            throw error
        }
        transactionDepth -= 1
        guard outermost else { return result }
        resetStatements()
        if walPolicy.pointee.restart_pending != 0 {
            // Everything is in the database now; this write starts the WAL over at its beginning.
            walPolicy.pointee.restart_pending = 0
            // A write with no meaning (not user_version: an older process must not lower it).
            // It needs no fsync: the checkpoint already synced every frame into the database,
            // so a torn WAL header after a crash only loses this write; the next real commit
            // (synchronous=FULL) syncs the restarted WAL.
            try? execute("PRAGMA synchronous = OFF; UPDATE wal_restart SET writes = writes + 1; PRAGMA synchronous = FULL")
        }
        return result
    }

    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The schema version kept in SQLite's `user_version`.
    public func userVersion() throws(StoreError) -> Int64 {
        let statement = try prepare("PRAGMA user_version")
        defer { statement.reset() }
        return try statement.step() ? statement.integer(0) : 0
    }

    /// Brings the database to version `migrations.count`, each migration moving it one version
    /// up in one transaction; a database newer than that is refused (`program` names who
    /// refuses it). Safe when several processes open it at once: the version is re-read under
    /// the write lock — and checked again there, since a newer program may have migrated the
    /// database in between.
    public func migrate(_ migrations: [String], program: String) throws(StoreError) {
        guard try knownVersion(migrations, program: program) < migrations.count else { return }
        try immediateTransaction { () throws(StoreError) in
            let locked = try knownVersion(migrations, program: program)
            for index in locked..<migrations.count {
                try execute(migrations[index])
                try execute("PRAGMA user_version = \(index + 1)")
            }
        }
    }

    /// `user_version` as an index into `migrations`: 0 through `migrations.count`. It is read
    /// from the file, so anything else (newer, or negative) fails closed instead of trapping.
    private func knownVersion(_ migrations: [String], program: String) throws(StoreError) -> Int {
        let version = try userVersion()
        guard version >= 0 else {
            throw StoreError(.corrupt, "database \(path) has schema version \(version), which no \(program) makes; restore it from backup")
        }
        guard version <= Int64(migrations.count) else {
            throw StoreError(.corrupt, "database \(path) has schema version \(version), newer than this \(program) (\(migrations.count)); upgrade securotp")
        }
        return Int(version)
    }

    /// Copies the WAL into the database file and empties it, so securotp.db alone is a
    /// complete copy of the store (the admin CLI does this before it exits).
    public func checkpoint() throws(StoreError) {
        resetStatements()
        try execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    private func resetStatements() {
        for statement in statements.values { statement.reset() }
    }

    var errorMessage: String { String(cString: sqlite3_errmsg(handle)) }

    /// A prepared statement; parameters are 1-based, columns 0-based.
    public final class Statement {
        private let statement: OpaquePointer
        private let path: String // statements don't reference their database: it owns them

        fileprivate init(_ statement: OpaquePointer, path: String) {
            self.statement = statement
            self.path = path
        }

        private var failure: StoreError {
            StoreError(.database, "database \(path): \(String(cString: sqlite3_errmsg(sqlite3_db_handle(statement))))")
        }

        deinit { sqlite3_finalize(statement) }

        @discardableResult
        public func bind(_ values: SQLiteValue...) throws(StoreError) -> Statement {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                let rc: Int32
                switch value {
                case .integer(let number): rc = sqlite3_bind_int64(statement, index, number)
                case .text(let text): rc = securotp_sqlite_bind_text(statement, index, text, -1)
                case .blob(let bytes):
                    rc = bytes.withUnsafeBytes { securotp_sqlite_bind_blob(statement, index, $0.baseAddress, Int32($0.count)) }
                case .null: rc = sqlite3_bind_null(statement, index)
                }
                guard rc == SQLITE_OK else { throw failure }
            }
            return self
        }

        /// Steps once: true when a row is available. At the end (or on error) the statement
        /// is reset, so it holds no lock.
        public func step() throws(StoreError) -> Bool {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: return true
            case SQLITE_DONE:
                reset()
                return false
            default:
                let error = failure
                reset()
                throw error
            }
        }

        /// Ends a read early (after the first row, say) and releases its snapshot.
        public func reset() { sqlite3_reset(statement) }

        /// Runs a statement that returns no rows.
        public func run() throws(StoreError) {
            while try step() {}
        }

        public func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

        public func text(_ column: Int32) -> String {
            guard let raw = sqlite3_column_text(statement, column) else { return "" }
            return String(cString: raw)
        }

        public func blob(_ column: Int32) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let raw = sqlite3_column_blob(statement, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: raw, count: count))
        }
    }
}

public enum SQLiteValue {
    case integer(Int64)
    case text(String)
    case blob([UInt8])
    case null
}
