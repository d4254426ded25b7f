import CPosix
import SecurOTPStore

/// pam_securotp.so is never unloaded (-z nodelete), so a process that authenticates many times
/// — a screen locker, a mail or web server using PAM — can keep one store connection instead of
/// reopening the database, rebuilding the WAL index and re-reading the schema for every login.
///
/// Safety: every use re-checks the files (owner, mode, inode, key file change time) and reopens
/// when anything differs; one mutex serialises users of the connection across threads; and
/// SQLite connections must not cross fork(), so pthread_atfork handlers close the connection
/// before a fork (holding the mutex, so no thread is inside SQLite) and give the child a fresh
/// mutex. Exactly-once acceptance does not depend on this cache: the database transaction
/// enforces it.
final class StoreCache: @unchecked Sendable {
    static let shared = StoreCache()

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var store: Store?

    private init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        // The module is never unloaded (-z nodelete), so these handlers stay valid.
        pthread_atfork(
            { StoreCache.shared.beforeFork() },
            { StoreCache.shared.afterForkInParent() },
            { StoreCache.shared.afterForkInChild() })
    }

    private func beforeFork() {
        pthread_mutex_lock(mutex)
        store = nil // closes the connection while no thread can be using it
    }

    private func afterForkInParent() { pthread_mutex_unlock(mutex) }

    private func afterForkInChild() { pthread_mutex_init(mutex, nil) }

    func withStore<R>(_ paths: StorePaths, _ body: (Store) throws(StoreError) -> R) throws(StoreError) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let identity = try StoreIdentity.checked(paths)
        if let store, store.paths == paths, store.identity == identity {
            return try body(store)
        }
        store = nil
        // As is: the module never creates or migrates a store (only the admin side does), so
        // an empty or unmigrated database is an error here, never an empty store.
        let fresh = try Store.open(paths, .asIs)
        store = fresh
        return try body(fresh)
    }
}
