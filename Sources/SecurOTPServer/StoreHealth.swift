import Foundation
import SecurOTPService

/// Whether the store answers, for `/v1/health`: a load balancer must drop a node that cannot
/// reach its database. The route needs no credential, so the store is asked at most once a
/// second whoever calls, and the answer comes within `deadline` (a check that hangs on an
/// unreachable PostgreSQL server is "unavailable", not a hung health probe).
actor StoreHealth {
    private let service: any TokenService
    private let deadline: Duration
    private var last: (at: ContinuousClock.Instant, healthy: Bool)?
    private var running: Task<Bool, Never>?

    init(service: any TokenService, deadline: Duration) {
        self.service = service
        self.deadline = deadline
    }

    func healthy() async -> Bool {
        let now = ContinuousClock.now
        if let last, now - last.at < .seconds(1) { return last.healthy }
        if let running { return await running.value }
        let (service, deadline) = (self.service, self.deadline)
        let check = Task<Bool, Never> {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer = FirstAnswer(continuation)
                Task { do { try await service.checkHealth(); answer.give(true) } catch { answer.give(false) } }
                Task { try? await Task.sleep(for: deadline); answer.give(false) }
            }
        }
        running = check
        let healthy = await check.value
        running = nil
        last = (ContinuousClock.now, healthy)
        return healthy
    }
}

/// Resumes a continuation with the first of several answers; later ones are dropped.
private final class FirstAnswer: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Bool, Never>?

    init(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation = continuation }

    func give(_ value: Bool) {
        lock.lock()
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(returning: value)
    }
}
