import PostgresNIO
import SecurOTPService
import SecurOTPStore

/// A verification waiting for a batch.
struct VerificationJob: Sendable {
    let call: VerifyCall
    let continuation: CheckedContinuation<VerifyResponse?, any Error>
    /// Batches whose write this job's write lost to another node's (or batch's) verification.
    var lostRaces = 0
}

/// Verifications of token codes, several per round trip: a batch is one read (every user's
/// tokens and failure rows, one snapshot) and one call that applies each verification's writes,
/// challenge and audit entry all or nothing and commits them before it answers. The writes are
/// conditional, so a verification that raced another (on this node or another) changes
/// nothing and decides again in the next batch on fresh rows, as it would have after waiting
/// for a lock. Two round trips and one commit per batch, not per verification: that, not the
/// decision itself, is what a verification costs on PostgreSQL.
extension PostgresTokenService {
    /// Lost races before a verification takes the advisory-lock path.
    static let batchAttempts = 3

    func runVerificationBatches() async {
        while let jobs = verificationJobs.next() {
            await runVerificationBatch(jobs)
        }
    }

    private func runVerificationBatch(_ jobs: [VerificationJob]) async {
        let outcomes: [Result<VerifyResponse?, any Error>]
        do {
            outcomes = try await client.withConnection { connection in try await self.verifyBatch(jobs, connection) }
        } catch {
            for job in jobs { job.continuation.resume(throwing: error) }
            return
        }
        var retries: [VerificationJob] = []
        for (job, outcome) in zip(jobs, outcomes) {
            if case .success(nil) = outcome, job.lostRaces + 1 < Self.batchAttempts {
                var again = job
                again.lostRaces += 1
                retries.append(again)
            } else {
                job.continuation.resume(with: outcome)
            }
        }
        if !retries.isEmpty {
            logger.debug("verifications lost a race and decide again", metadata: ["count": "\(retries.count)", "batch": "\(jobs.count)"])
        }
        verificationJobs.retry(retries)
    }

    /// One outcome per job: its response, nil when its writes lost a race, or its own error.
    private func verifyBatch(_ jobs: [VerificationJob], _ connection: PostgresConnection) async throws -> [Result<VerifyResponse?, any Error>] {
        let now = self.now()
        let reads = try await verificationReads(users: jobs.map(\.call.user), connection)
        var outcomes: [Result<VerifyResponse?, any Error>] = []
        var decided: [(job: Int, rows: String, ops: [PostgresWrites.Op])] = []
        for (index, job) in jobs.enumerated() {
            do {
                // unnest gives every user asked about a row; a missing one fails closed.
                guard let (snapshot, key, ownPolicy) = reads[job.call.user] else { throw StoreError(.database, "no row was read for \(job.call.user)") }
                // The user's methods from the same read (no round trip of their own). The batch
                // serves only hosts that keep no offline codes, so none are dropped here.
                var call = job.call
                call.passcodeRefusal = MethodRules.refusal(.otp, try self.methods(user: job.call.user, ownPolicy: ownPolicy))
                let outcome = try HostVerification.verify(call, VerifyReads(failureKey: key, snapshot: snapshot), engine: self.engine,
                                                          policy: self.settings.policy, now: now)
                decided.append((index, key ?? job.call.user,
                                PostgresWrites.ops(outcome.changes.writes, challenge: outcome.changes.challenge, audit: outcome.changes.audit)))
                outcomes.append(.success(outcome.response))
            } catch {
                outcomes.append(.failure(error))
            }
        }
        guard !decided.isEmpty else { return outcomes }
        // A verification writes the rows of one name (the user's, or the row unknown names
        // share). Two batches in flight may hold the same names; applying every batch in name
        // order takes the row locks in one global order, so they wait for each other instead
        // of deadlocking (PostgreSQL would abort one batch, and its hosts would see an error).
        decided.sort { $0.rows.utf8.lexicographicallyPrecedes($1.rows.utf8) }
        let documents = decided.map(\.ops)
        var applied: [Int64] = []
        for try await row in try await connection.execute(PostgresWrites.ApplyCommitted(documents: PostgresWrites.documents(documents)),
                                                          logger: logger) {
            applied = row
        }
        guard applied.count == documents.count else {
            throw StoreError(.database, "PostgreSQL answered \(applied.count) outcomes for \(documents.count) verifications")
        }
        for (document, decision) in decided.enumerated() {
            if applied[document] < 0 {
                outcomes[decision.job] = .success(nil)
            } else if applied[document] != Int64(decision.ops.count) {
                outcomes[decision.job] = .failure(PostgresWrites.Conflict(write: nil))
            }
        }
        return outcomes
    }
}
