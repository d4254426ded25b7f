import Foundation

/// Work waiting to be done in batches by a few runners: like SQLite's group commit, what
/// arrives while a batch is in flight goes into the next one, so a batch is as large as the
/// load makes it and a lone request waits for nobody. A batch never holds two jobs of one key
/// (the second waits for the next batch: two verifications of one user in one snapshot would
/// only make one of them lose its race).
final class BatchQueue<Job>: @unchecked Sendable {
    let maximumBatch: Int
    let maximumRunners: Int
    private let key: (Job) -> String
    private let lock = NSLock()
    private var waiting: [Job] = []
    private var runners = 0

    init(maximumBatch: Int, maximumRunners: Int, key: @escaping (Job) -> String) {
        self.maximumBatch = maximumBatch
        self.maximumRunners = maximumRunners
        self.key = key
    }

    /// Queues `job`; true when the caller must start a runner (one that calls `next()` until nil).
    func add(_ job: Job) -> Bool {
        lock.withLock {
            waiting.append(job)
            guard runners < maximumRunners else { return false }
            runners += 1
            return true
        }
    }

    /// Puts jobs back at the front (they go into the next batch, before newer ones).
    func retry(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        lock.withLock { waiting.insert(contentsOf: jobs, at: 0) }
    }

    /// The next batch, oldest first; nil when nothing waits, and then the calling runner is
    /// counted out (under the same lock as `add`, so no job is left without a runner).
    func next() -> [Job]? {
        lock.withLock {
            guard !waiting.isEmpty else {
                runners -= 1
                return nil
            }
            var batch: [Job] = [], keys = Set<String>(), left: [Job] = []
            var index = waiting.startIndex
            while index < waiting.endIndex, batch.count < maximumBatch {
                let job = waiting[index]
                if keys.insert(key(job)).inserted { batch.append(job) } else { left.append(job) }
                index += 1
            }
            waiting = left + waiting[index...]
            return batch
        }
    }
}
