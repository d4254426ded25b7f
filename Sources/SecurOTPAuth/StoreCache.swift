import CSystem
import SecurOTPStore

/// pam_securotp.so is never unloaded (-z nodelete), so a process that authenticates many times
/// — a screen locker, a mail or web server using PAM — can keep one store connection instead of
/// reopening the database, rebuilding the WAL index and re-reading the schema for every login.
///
/// Safety: every use re-checks the files (owner, mode, inode, key file change time) and reopens
/// when anything differs; one mutex serialises users of the connection across threads; a
/// forked child never touches its parent's connection (it is abandoned, not closed, because
/// SQLite connections must not cross fork). Exactly-once acceptance does not depend on this
/// cache: it is enforced by the database transaction.
final class StoreCache: @unchecked Sendable {
    static let shared = StoreCache()

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var store: Store?
    private var owner: pid_t = 0

    private init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    func withStore<R>(_ paths: StorePaths, _ body: (Store) throws(StoreError) -> R) throws(StoreError) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let identity = try StoreIdentity.checked(paths)
        if let store, owner != getpid() {
            _ = Unmanaged.passRetained(store) // forked child: leave the parent's connection alone
            self.store = nil
        }
        if let store, store.paths == paths, store.identity == identity {
            return try body(store)
        }
        store = nil
        let fresh = try Store.open(paths)
        store = fresh
        owner = getpid()
        return try body(fresh)
    }
}
