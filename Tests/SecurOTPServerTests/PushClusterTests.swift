import Foundation
import Logging
import SecurOTPPostgres
import SecurOTPServer
import SecurOTPService
import Testing

/// Two validators on one PostgreSQL database (issue 14 item 8): a device's answer on one node
/// ends a host's wait on the other at once (LISTEN/NOTIFY, PushChangeFeed), and the approval is
/// handed out once whichever node is asked.
@Suite("Validator API: push approval across two nodes on PostgreSQL", .needsPostgreSQL)
struct PushClusterTests {
    /// Node A as ValidatorFixture makes it, and node B: a second service on A's database.
    static func twoNodes() async throws -> (ValidatorFixture, ValidatorFixture) {
        let a = try await ValidatorFixture.make(.postgres)
        var logger = Logger(label: "securotp-test")
        logger.logLevel = .critical
        let url = try #require(a.configuration.postgresURL)
        let service = try await PostgresTokenService.connect(url: url, settings: a.configuration.store, logger: logger, pushPolicy: a.configuration.push,
                                                             clock: a.clock.service)
        // database nil: node A drops it when it is done. One clock: the nodes agree on the time.
        let b = ValidatorFixture(directory: a.directory, service: service, configuration: a.configuration, admin: a.admin, host: a.host, database: nil,
                                 clock: a.clock, waiters: PushWaiters(capacity: a.configuration.maxPushWaiters))
        return (a, b)
    }

    @Test("A host waits on node A, the device answers on node B: the wait returns at once with the approval, and never again")
    func answerOnAnotherNode() async throws {
        let (a, b) = try await Self.twoNodes()
        try await a.withClient { nodeA in
            try await b.withClient { nodeB in
                let device = try await PushAPITests.enrollDevice(nodeB, b, "alice")

                // The device waits on node B; the host opens on node A: the device's wait wakes.
                async let arriving = nodeB.call(.post, "/v1/device/requests", ["wait": 30], bearer: device.credential)
                #expect(await b.waiters.held(atLeast: 1), "the long-poll never parked")
                let id = try #require(try await PushAPITests.open(nodeA, a, "alice").string("id"))
                let opened = Date()
                let list = try await arriving
                let request = try #require((list["requests"] as? [[String: Any]])?.first, "\(list.text)")
                #expect(request["id"] as? String == id)
                #expect(Date().timeIntervalSince(opened) < 5, "the device's wait on B woke for a request opened on A (bound 30 s)")

                // The host waits on node A; the device answers on node B.
                let body = try device.approval(of: request, number: "492817")
                async let waited = nodeA.call(.post, "/v1/push/wait", ["id": id, "wait": 30], bearer: a.host)
                #expect(await a.waiters.held(atLeast: 1), "the long-poll never parked")
                let answer = try await nodeB.call(.post, "/v1/device/answer", body, bearer: device.credential)
                let answered = Date()
                #expect(answer.string("state") == "approved", "\(answer.text)")
                let result = try await waited
                let elapsed = Date().timeIntervalSince(answered)
                #expect(result.string("state") == "consumed" && result["approval"] != nil, "\(result.text)")
                #expect(elapsed < 5, "woke \(elapsed) s after the answer on the other node committed; the wait's bound was 30 s")

                // Exactly once: a second wait on either node gets no approval.
                for node in [nodeA, nodeB] {
                    let again = try await node.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: a.host)
                    #expect(again.string("state") == "consumed" && again["approval"] == nil, "\(again.text)")
                }
                // The approval's result is recorded once, on either node.
                let accepted = try await nodeB.call(.post, "/v1/push/result", ["id": id, "accepted": true, "reason": ""], bearer: a.host)
                #expect(accepted.status == 204, "\(accepted.text)")
                let twice = try await nodeA.call(.post, "/v1/push/result", ["id": id, "accepted": true, "reason": ""], bearer: a.host)
                #expect(twice.status == 400, "\(twice.text)")
            }
        }
    }

    @Test("Racing waits on both nodes: exactly one of them gets the approval")
    func racingWaits() async throws {
        let (a, b) = try await Self.twoNodes()
        try await a.withClient { nodeA in
            try await b.withClient { nodeB in
                let device = try await PushAPITests.enrollDevice(nodeA, a, "bob")
                let id = try #require(try await PushAPITests.open(nodeA, a, "bob").string("id"))
                let request = try #require(try await PushAPITests.pending(nodeA, device).first)
                async let onA = nodeA.call(.post, "/v1/push/wait", ["id": id, "wait": 30], bearer: a.host)
                async let onB = nodeB.call(.post, "/v1/push/wait", ["id": id, "wait": 30], bearer: a.host)
                #expect(await a.waiters.held(atLeast: 1), "the long-poll never parked")
                #expect(await b.waiters.held(atLeast: 1), "the long-poll never parked")
                _ = try await nodeB.call(.post, "/v1/device/answer", try device.approval(of: request, number: "492817"), bearer: device.credential)
                let answered = Date()
                let (first, second) = try await (onA, onB)
                #expect(Date().timeIntervalSince(answered) < 5, "both waits woke (bound 30 s)")
                let approvals = [first, second].filter { $0["approval"] != nil }.count
                #expect(approvals == 1, "\(first.text) \(second.text)")
                #expect(first.string("state") == "consumed" && second.string("state") == "consumed")
            }
        }
    }
}
