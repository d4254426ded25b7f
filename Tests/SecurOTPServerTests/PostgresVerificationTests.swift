import Foundation
@testable import SecurOTPPostgres
import SecurOTPService
import Testing

/// PostgreSQL's verification path: batches of concurrent verifications, each decided once and
/// committed before its host hears the answer.
@Suite("PostgreSQL: batched verification", .needsPostgreSQL)
struct PostgresVerificationTests {
    static let host = Caller(kind: .host, name: "web1", address: "127.0.0.1")

    /// Runs `body` on a fresh PostgreSQL fixture and drops it afterwards, failed or not.
    static func withFixture(_ body: (ValidatorFixture, _ database: String) async throws -> Void) async throws {
        let fixture = try await ValidatorFixture.make(.postgres)
        do {
            try await body(fixture, try #require(fixture.database))
        } catch {
            await fixture.cleanUp()
            throw error
        }
        await fixture.cleanUp()
    }

    static func enroll(_ fixture: ValidatorFixture, _ user: String) async throws -> String {
        try await fixture.service.enroll(user: user, EnrollRequest(), caller: .local("test")).secret
    }

    /// A deferred trigger runs at commit: it makes every commit that touched tokens take a
    /// second, so an "accept" sent before its commit would be seen here. (PostgreSQL sends a
    /// small result only when it flushes at Sync, after an autocommit statement's commit; the
    /// batch procedure commits inside the call, so this holds by contract, not by buffering.)
    @Test("An accept is answered only after its write is committed (a commit made slow is not overtaken)")
    func answeredAfterCommit() async throws {
        try await Self.withFixture { fixture, database in
            let secret = try await Self.enroll(fixture, "alice")
            try TestPostgres.sql("""
                CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$;
                CREATE CONSTRAINT TRIGGER slow_commit AFTER UPDATE ON tokens DEFERRABLE INITIALLY DEFERRED
                    FOR EACH ROW EXECUTE FUNCTION slow_commit();
                """, database: database)
            let before = try TestPostgres.value("SELECT last_step FROM tokens WHERE \"user\" = 'alice'", database: database)
            let started = Date()
            let answer = try await fixture.service.verify(VerifyRequest(user: "alice", passcode: Codes.totp(secret)), caller: Self.host)
            #expect(answer.result == .accept)
            #expect(Date().timeIntervalSince(started) >= 1, "the answer came before the slow commit finished")
            let after = try TestPostgres.value("SELECT last_step FROM tokens WHERE \"user\" = 'alice'", database: database)
            #expect(after != before, "the accepted code's step is not committed when the host hears 'accept' (\(before) → \(after))")
        }
    }

    @Test("Many users at once: each right code accepted once, replays and wrong codes rejected, one audit entry each")
    func concurrentBatches() async throws {
        try await Self.withFixture { fixture, database in
            var secrets: [String] = []
            for index in 0..<48 { secrets.append(try await Self.enroll(fixture, "user\(index)")) }
            let service = fixture.service
            // Each user's right code twice and a wrong code, all in flight together: a batch
            // holds one verification per user, so the copies wait for (or race) each other.
            let requests = secrets.enumerated().flatMap { index, secret -> [(user: Int, code: String, right: Bool)] in
                let code = Codes.totp(secret)
                return [(index, code, true), (index, code, true), (index, Codes.wrongTOTP(secret), false)]
            }.shuffled()
            let outcomes = try await withThrowingTaskGroup(of: (user: Int, right: Bool, result: VerifyResultKind).self) { group in
                for request in requests {
                    group.addTask {
                        let answer = try await service.verify(VerifyRequest(user: "user\(request.user)", passcode: request.code), caller: Self.host)
                        return (request.user, request.right, answer.result)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for index in secrets.indices {
                let mine = outcomes.filter { $0.user == index }
                #expect(mine.filter { $0.right && $0.result == .accept }.count == 1, "user\(index): \(mine)")
                #expect(mine.filter { $0.result == .reject }.count == 2, "user\(index): \(mine)")
            }
            let audited = try TestPostgres.value("SELECT count(*) FROM audit WHERE action = 'verify'", database: database)
            #expect(audited == "\(requests.count)", "one audit entry per verification")
        }
    }
}

@Suite("Batch queue")
struct BatchQueueTests {
    @Test("A runner per add while under the limit; one job per key per batch, oldest first; retries go first")
    func batches() {
        let queue = BatchQueue<(key: String, id: Int)>(maximumBatch: 3, maximumRunners: 2, key: \.key)
        #expect(queue.add(("a", 1)))
        #expect(queue.add(("a", 2)))
        #expect(!queue.add(("b", 3)), "two runners already")
        #expect(!queue.add(("c", 4)))
        #expect(!queue.add(("d", 5)))
        #expect(queue.next()?.map(\.id) == [1, 3, 4], "the second 'a' and what does not fit wait")
        queue.retry([("c", 4)])
        #expect(queue.next()?.map(\.id) == [4, 2, 5])
        #expect(queue.next() == nil, "empty: this runner stops")
        #expect(queue.next() == nil, "and the other")
        #expect(queue.add(("e", 6)), "no runner left: the next add starts one")
    }
}
