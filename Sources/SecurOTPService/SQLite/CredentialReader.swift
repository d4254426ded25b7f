import Foundation
import SecurOTPStore

/// Credential checks on the caller's own thread, from a read-only connection of their own.
/// A check is one indexed read; sent through the store thread it cost every verification a
/// second hand-off between threads and a place in a group commit. In WAL mode a reader sees
/// the last committed state without waiting for the writer, so a revoked credential is
/// refused from the moment its revocation committed, as before.
final class CredentialReader: @unchecked Sendable {
    private let lock = NSLock()
    private let database: SQLiteDatabase

    /// `path`: the database the store opened (and checked) already.
    init(path: String) throws(StoreError) {
        database = try SQLiteDatabase(path: path, create: false)
        try database.execute("PRAGMA query_only = ON")
    }

    func credential(id: String) throws(StoreError) -> CredentialRecord? {
        lock.lock()
        defer { lock.unlock() }
        return try AccessTables(db: database).credential(id: id)
    }
}
