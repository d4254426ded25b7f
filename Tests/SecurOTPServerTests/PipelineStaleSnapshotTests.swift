import Foundation
@testable import SecurOTPPostgres
@testable import SecurOTPService
import SecurOTPStore
import Testing

/// Two validator nodes that skipped the per-user serialisation: both read the same rows, both
/// decide (HostVerification) that the code is good, then apply one after the other through the
/// real storage adapter. The conditional writes alone must keep every code single-use, and the
/// loser must leave nothing behind — not even its audit entry. (StaleSnapshotTests does the
/// same at the engine level for the memory backend and the SQLite store.)
@Suite("Pipeline: stale snapshots on SQLite and PostgreSQL")
struct PipelineStaleSnapshotTests {
    static let host = Caller(kind: .host, name: "web1", address: "127.0.0.1")

    /// One backend's storage, entered twice as two nodes would.
    struct Node {
        let engine: VerificationEngine
        let read: @Sendable (VerifyCall) async throws -> VerifyReads
        let apply: @Sendable (VerifyCall, HostChanges) async throws -> Void
    }

    static func node(_ fixture: ValidatorFixture, _ backend: Backend) throws -> Node {
        switch backend {
        case .sqlite:
            // A second connection to the fixture's database, as a second process would open.
            let store = try Store.open(fixture.configuration.store.paths, .asIs)
            let storage = SQLiteVerificationStorage(store: store, tables: AccessTables(db: store.database))
            let box = UncheckedBox(storage)
            return Node(engine: store.engine,
                        read: { call in
                            try box.value.serialised(user: call.user) { () throws(StoreError) in
                                VerifyReads(failureKey: nil, snapshot: try box.value.snapshot(user: call.user, failureKey: nil, rows: call.rows))
                            }
                        },
                        apply: { call, changes in
                            try box.value.serialised(user: call.user) { () throws(StoreError) in
                                try box.value.apply(changes, host: call.caller.name, user: call.user)
                            }
                        })
        case .postgres:
            let service = try #require(fixture.service as? PostgresTokenService)
            return Node(engine: service.engine,
                        read: { call in
                            try await service.transaction("reading") { connection in
                                VerifyReads(failureKey: nil, snapshot: try await service.snapshot(user: call.user, failureKey: nil,
                                                                                                  rows: call.rows, connection))
                            }
                        },
                        apply: { call, changes in
                            try await service.transaction("applying") { connection in
                                try await service.apply(changes, host: call.caller.name, user: call.user, connection)
                            }
                        })
        }
    }

    static let hotpSecret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
    static let totpSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

    @Test(arguments: Backend.tested, ["one TOTP code twice", "one HOTP code twice", "two fresh HOTP codes", "one recovery code twice"])
    func twoNodesOneAcceptance(backend: Backend, race: String) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        do {
            try await run(race, fixture, backend)
        } catch {
            await fixture.cleanUp()
            throw error
        }
        await fixture.cleanUp()
    }

    func run(_ race: String, _ fixture: ValidatorFixture, _ backend: Backend) async throws {
        let service = fixture.service
        let local = Caller.local("test")
        for (user, uri) in [("alice", "otpauth://hotp/alice?secret=\(Self.hotpSecret)&counter=0"), ("bob", "otpauth://totp/bob?secret=\(Self.totpSecret)")] {
            _ = try await service.importTokens(user: user, ImportRequest(source: Data(uri.utf8).base64EncodedString()), caller: local)
        }
        let recovery = try await service.recoveryCodes(user: "carol", RecoveryCodesRequest(count: 2), caller: local).codes
        let (user, first, second): (String, String, String) = switch race {
        case "one TOTP code twice": ("bob", Codes.totp(Self.totpSecret), Codes.totp(Self.totpSecret))
        case "one HOTP code twice": ("alice", Codes.hotp(Self.hotpSecret, counter: 0), Codes.hotp(Self.hotpSecret, counter: 0))
        case "two fresh HOTP codes": ("alice", Codes.hotp(Self.hotpSecret, counter: 0), Codes.hotp(Self.hotpSecret, counter: 1))
        default: ("carol", recovery[0], recovery[0])
        }
        let nodeA = try Self.node(fixture, backend), nodeB = try Self.node(fixture, backend)
        let callA = try VerifyCall(VerifyRequest(user: user, passcode: first), caller: Self.host)
        let callB = try VerifyCall(VerifyRequest(user: user, passcode: second), caller: Self.host)
        let now = Int64(Date().timeIntervalSince1970)
        let readsA = try await nodeA.read(callA), readsB = try await nodeB.read(callB)
        let a = try HostVerification.verify(callA, readsA, engine: nodeA.engine, policy: VerifyPolicy(), now: now)
        let b = try HostVerification.verify(callB, readsB, engine: nodeB.engine, policy: VerifyPolicy(), now: now)
        #expect(a.response.result == .accept && b.response.result == .accept, "both nodes accept on the same rows: \(a.response), \(b.response)")
        try await nodeA.apply(callA, a.changes)
        await #expect(throws: (any Error).self, "\(backend): the second acceptance of a stale snapshot was written") {
            try await nodeB.apply(callB, b.changes)
        }
        // The loser left nothing behind: its audit entry is gone with its writes, and the
        // next verification of the first code sees the winner's write.
        let audited = try await service.audit(user: user, limit: 100, caller: local).entries.filter { $0.action == "verify" }
        #expect(audited.count == 1, "\(backend): \(audited)")
        let again = try await service.verify(VerifyRequest(user: user, passcode: first), caller: Self.host)
        #expect(again.result != .accept, "\(backend): \(race): the code was accepted again")
    }
}

/// The SQLite adapter holds a connection that is used from one task at a time here.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
