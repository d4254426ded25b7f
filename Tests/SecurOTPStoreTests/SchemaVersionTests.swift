import Foundation
import Testing
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// `user_version` is read from the file, so it is outside input: every read of it is checked
/// against the migrations this build knows, and a value outside them fails closed.
@Suite struct SchemaVersionTests {
    static func scratchDatabase() throws -> (directory: String, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-schema-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return (directory, directory + "/test.db")
    }

    /// A connection handed to one other thread, used there only after this one stopped.
    final class Connection: @unchecked Sendable {
        let db: SQLiteDatabase
        init(_ db: SQLiteDatabase) { self.db = db }
    }

    static let twoMigrations = ["CREATE TABLE a (x INTEGER)", "CREATE TABLE b (x INTEGER)"]

    /// The version grows past the known migrations between migrate's first read and its read
    /// under the write lock (another, newer program migrated in between): before the fix this
    /// built the range 99..<2 and trapped.
    @Test func aVersionThatGrowsBetweenTheTwoReadsFailsClosed() throws {
        let (directory, path) = try Self.scratchDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = try SQLiteDatabase(path: path, create: true)
        try db.execute("PRAGMA journal_mode = WAL")
        // A second connection holds the write lock with user_version = 99 written but not
        // committed: migrate's first read still sees 0, its BEGIN IMMEDIATE waits for the lock.
        let newer = Connection(try SQLiteDatabase(path: path, create: false))
        try newer.db.execute("BEGIN IMMEDIATE; PRAGMA user_version = 99")
        let committed = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            usleep(400_000)
            try? newer.db.execute("COMMIT")
            committed.signal()
        }
        #expect(throws: StoreError(.corrupt, "")) { try db.migrate(Self.twoMigrations, program: "test") }
        committed.wait()
        #expect(try db.userVersion() == 99, "nothing was migrated over the newer version")
    }

    @Test(arguments: [Int64(-1), 3, 99])
    func aVersionOutsideTheKnownMigrationsIsRefused(_ version: Int64) throws {
        let (directory, path) = try Self.scratchDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = try SQLiteDatabase(path: path, create: true)
        try db.execute("PRAGMA user_version = \(version)")
        #expect {
            try db.migrate(Self.twoMigrations, program: "test")
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .corrupt && error.message.contains(path) && error.message.contains("\(version)")
        }
    }

    // MARK: who may create or migrate the store

    /// A state directory whose store is made and closed again: no connection stays open while
    /// a test damages the files.
    final class ClosedStore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-\(UUID().uuidString)").path
        var paths: StorePaths { StorePaths(stateDirectory: directory) }

        init() throws {
            let store = try Store.open(paths, .create)
            try store.checkpoint()
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    static func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
    }

    /// SQLite opens a zero-length file as an empty database (user_version 0): no mode adopts it.
    @Test(arguments: [StoreOpenMode.asIs, .migrate, .create])
    func aZeroLengthDatabaseIsRefusedInEveryMode(_ mode: StoreOpenMode) throws {
        let scratch = try ClosedStore()
        let database = scratch.paths.database
        for suffix in ["-wal", "-shm"] { unlink(database + suffix) }
        #expect(truncate(database, 0) == 0)
        #expect {
            _ = try Store.open(scratch.paths, mode)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .corrupt && error.message.contains(database) && error.message.contains("restore it from backup")
                && error.message.contains("securotp --state-dir \(scratch.directory) enroll")
        }
        #expect(try Self.fileSize(database) == 0, "\(mode) wrote into the empty file")
    }

    /// A database made by the first three migrations, as an older securotp left it.
    static func olderStore() throws -> ClosedStore {
        let scratch = try ClosedStore()
        let database = scratch.paths.database
        for suffix in ["", "-wal", "-shm"] { unlink(database + suffix) }
        let db = try SQLiteDatabase(path: database, create: true)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.migrate(Array(Schema.migrations.prefix(3)), program: "an older securotp")
        return scratch
    }

    /// Schema 9 makes passkey credential ids unique: a store of schema 8 where two web devices
    /// share one is refused with both named and nothing changed; unlinked as the message says,
    /// it migrates and keeps every row.
    @Test func repeatedPasskeyCredentialIDsStopTheUpgradeNamingTheDevices() throws {
        let scratch = try ClosedStore()
        let database = scratch.paths.database
        for suffix in ["", "-wal", "-shm"] { unlink(database + suffix) }
        do {
            let db = try SQLiteDatabase(path: database, create: true)
            try db.execute("PRAGMA journal_mode = WAL")
            try db.migrate(Array(Schema.migrations.prefix(8)), program: "an older securotp")
            try db.execute("""
                INSERT INTO devices (id, user, state, created) VALUES ('dev-old', 'alice', 'active', 100), ('dev-new', 'mallory', 'active', 200),
                    ('dev-other', 'bob', 'active', 150), ('dev-pending', 'carol', 'pending', 300), ('dev-pending2', 'dave', 'pending', 300);
                INSERT INTO web_devices (device, credential_id) VALUES ('dev-new', x'0102'), ('dev-old', x'0102'), ('dev-other', x'0304'),
                    ('dev-pending', NULL), ('dev-pending2', NULL);
                """)
        }
        #expect {
            _ = try Store.open(scratch.paths, .migrate)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .corrupt && error.message.contains("\"dev-old\" of \"alice\", \"dev-new\" of \"mallory\"")
                && !error.message.contains("dev-other") && error.message.contains("WHERE device IN ('dev-new')")
                && error.message.contains(database)
        }
        let db = try SQLiteDatabase(path: database, create: false)
        #expect(try db.userVersion() == 8, "refused, and left as it was")
        try db.execute("UPDATE web_devices SET credential_id = NULL WHERE device IN ('dev-new')")
        #expect(try Store.open(scratch.paths, .migrate).schemaVersion == Schema.currentVersion)
        let count = try db.prepare("SELECT count(*) FROM web_devices")
        #expect(try count.step() && count.integer(0) == 5, "every row kept")
        count.reset()
        #expect(throws: StoreError.self, "the index refuses a repeat from now on") {
            try db.execute("UPDATE web_devices SET credential_id = x'0304' WHERE device = 'dev-old'")
        }
    }

    @Test func anOlderSchemaIsRefusedAsIsAndMigratedByTheAdminSide() throws {
        let scratch = try Self.olderStore()
        #expect {
            _ = try Store.open(scratch.paths, .asIs)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .corrupt && error.message.contains("schema version 3")
                && error.message.contains("securotp --state-dir \(scratch.directory) status")
        }
        #expect(try SQLiteDatabase(path: scratch.paths.database, create: false).userVersion() == 3, "refused, and left as it was")
        #expect(try Store.open(scratch.paths, .migrate).schemaVersion == Schema.currentVersion)
        #expect(try Store.open(scratch.paths, .asIs).schemaVersion == Schema.currentVersion)
    }

    @Test(arguments: [StoreOpenMode.asIs, .migrate])
    func onlyCreateMakesAStore(_ mode: StoreOpenMode) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let paths = StorePaths(stateDirectory: directory)
        #expect(throws: StoreError(.missing, "")) { try Store.open(paths, mode) }
        #expect(!FileManager.default.fileExists(atPath: paths.database))
        #expect(try Store.open(paths, .create).schemaVersion == Schema.currentVersion)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".new-") }
        #expect(left.isEmpty, "the temporary database was left behind: \(left)")
    }
}
