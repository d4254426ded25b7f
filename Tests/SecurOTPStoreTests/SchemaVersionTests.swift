import Foundation
import Testing
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
}
