import Foundation
import SecurOTPStore

/// Owns the SQLite store on one thread and runs callers' jobs there, several at a time in one
/// transaction (group commit): each job runs in its own savepoint, so a failing job rolls back
/// alone, and every job's answer is released only after the shared COMMIT is on disk. One
/// fsync then serves many verifications, which is what bounds SQLite's write rate.
final class StoreExecutor: @unchecked Sendable {
    /// Jobs committed together at most; more wait for the next transaction.
    static let maxBatch = 128

    private struct Job {
        let execute: (Store) -> Void
        let finish: (ServiceError?) -> Void
    }

    private let store: Store
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)
    /// Checkpoints the WAL into the database off the commit path (see Checkpointer).
    private let checkpointer: Checkpointer?

    /// `backgroundCheckpoints`: for a long-lived process (securotpd); short-lived ones (the
    /// CLI) keep the store's own WAL policy and checkpoint when they stop.
    init(store: Store, backgroundCheckpoints: Bool) {
        self.store = store
        checkpointer = backgroundCheckpoints ? Checkpointer(database: store.paths.database) : nil
        // Only with a checkpointer running may the writer leave checkpoints to it.
        if checkpointer != nil { store.database.restartWriteAheadLogOnlyAfter(frames: Checkpointer.restartFrames) }
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "securotp-store"
        thread.start()
    }

    /// Runs `body` on the store thread inside a savepoint of the current batch's transaction;
    /// returns once that transaction committed (or throws its error).
    func run<R: Sendable>(_ body: @escaping (Store) throws(ServiceError) -> R) async throws(ServiceError) -> R {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, ServiceError>, Never>) in
            let slot = ResultSlot<R>()
            let job = Job(
                execute: { store in
                    slot.result = Result { () throws(ServiceError) -> R in
                        try store.database.immediateTransaction({ () throws(ServiceError) -> R in try body(store) },
                                                                databaseError: ServiceError.init)
                    }
                },
                finish: { commitError in
                    continuation.resume(returning: commitError.map { .failure($0) } ?? slot.result ?? .failure(ServiceError(.system, "job did not run")))
                })
            enqueue(job)
        }
        return try outcome.get()
    }

    private func enqueue(_ job: Job) {
        condition.lock()
        if stopped {
            condition.unlock()
            job.finish(ServiceError(.unavailable, "the store is closed"))
            return
        }
        queue.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs what is queued, checkpoints the WAL into the database (so the file alone is a
    /// complete copy, for backups) and returns when the store thread has ended.
    func stop() {
        condition.lock()
        let first = !stopped
        stopped = true
        condition.signal()
        condition.unlock()
        if first { finished.wait() }
    }

    private func loop() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopped { condition.wait() }
            if queue.isEmpty && stopped {
                condition.unlock()
                checkpointer?.stop()
                try? store.checkpoint()
                finished.signal()
                return
            }
            let batch = Array(queue.prefix(Self.maxBatch))
            queue.removeFirst(batch.count)
            condition.unlock()

            var commitError: ServiceError?
            do {
                try store.database.immediateTransaction { () throws(StoreError) in
                    for job in batch { job.execute(store) }
                }
            } catch {
                commitError = ServiceError(error)
            }
            for job in batch { job.finish(commitError) }
        }
    }
}

/// A second connection that copies the WAL into the database every `interval`, PASSIVE: it
/// takes what committed transactions left and never waits for, or blocks, the writer. Once a
/// checkpoint has copied everything, SQLite starts the WAL again from its beginning at the
/// next commit; under a load that never pauses that moment never comes, and the writer
/// restarts the WAL itself past `restartFrames` (SQLiteDatabase.restartWriteAheadLogOnlyAfter).
private final class Checkpointer: @unchecked Sendable {
    /// Short, so that the writer's restart (below) has little left to copy.
    static let interval = 0.1
    /// The writer starts the WAL over past this many frames (128 MiB of 4 KiB pages): about
    /// every 2 s at the highest rate measured, never at ordinary rates, where these
    /// checkpoints catch up between commits and the WAL restarts by itself.
    static let restartFrames: Int32 = 32_768

    private let database: SQLiteDatabase
    /// Signalled once, by stop(); until then every wait times out into a checkpoint.
    private let stopRequest = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init?(database path: String) {
        guard let database = try? SQLiteDatabase(path: path, create: false) else { return nil }
        self.database = database
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "securotp-checkpoint"
        thread.start()
    }

    /// Ends the thread; returns when it has. Called once, by the store thread as it ends.
    func stop() {
        stopRequest.signal()
        finished.wait()
    }

    private func loop() {
        while stopRequest.wait(timeout: .now() + Self.interval) == .timedOut {
            try? database.execute("PRAGMA wal_checkpoint(PASSIVE)")
        }
        finished.signal()
    }
}

/// Written on the store thread before the job's continuation is resumed.
private final class ResultSlot<R>: @unchecked Sendable {
    var result: Result<R, ServiceError>?
}
