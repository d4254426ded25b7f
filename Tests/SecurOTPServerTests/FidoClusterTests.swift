import Foundation
import SecurOTPService
import Testing

/// Two validators on one PostgreSQL database (issue 15 item 5, docs/fido.md "Remote mode"): a
/// security-key assertion is accepted at most once whichever nodes it reaches, and a counter
/// that did not rise is refused on the other node too.
@Suite("Validator API: FIDO security keys across two nodes on PostgreSQL", .needsPostgreSQL)
struct FidoClusterTests {
    /// Sends `bodies` to the nodes at once, the i-th to `nodes[i % 2]`; the results in order.
    private static func concurrently(_ nodes: [APIClient], _ bodies: [[String: Any]], host: String) async throws -> [String] {
        let encoded = try bodies.map { try JSONSerialization.data(withJSONObject: $0) }
        return try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for (index, body) in encoded.enumerated() {
                let node = nodes[index % nodes.count]
                group.addTask {
                    let decoded = try JSONSerialization.jsonObject(with: body) as? [String: Any]
                    let answer = try await node.call(.post, "/v1/fido/verify", decoded, bearer: host)
                    return (index, "\(answer.string("result") ?? answer.text): \(answer.string("reason") ?? "")")
                }
            }
            var results = Array(repeating: "", count: encoded.count)
            for try await (index, result) in group { results[index] = result }
            return results
        }
    }

    @Test("The same assertion sent to both nodes at once, ten times over: exactly one acceptance each time, the other refused for its used challenge")
    func sameAssertionBothNodes() async throws {
        let (a, b) = try await PushClusterTests.twoNodes()
        let key = try TestKey()
        let serial = try await FidoAPITests.enroll(a, key)
        try await a.withClient { nodeA in
            try await b.withClient { nodeB in
                for round in 1...10 {
                    let offer = try await FidoAPITests.challenge(round.isMultiple(of: 2) ? nodeA : nodeB, a.host)
                    let body = try key.assertion(offer, user: "root", serial: serial, counter: UInt32(round))
                    let results = try await Self.concurrently([nodeA, nodeB], [body, body], host: a.host)
                    #expect(results.filter { $0.hasPrefix("accept") }.count == 1, "round \(round): \(results)")
                    #expect(results.filter { $0.hasPrefix("reject: unknown, expired or used FIDO challenge") }.count == 1, "round \(round): \(results)")
                }
                let listed = try await nodeB.call(.get, "/v1/users/root/fido", bearer: a.admin)
                let credential = try #require((listed["credentials"] as? [[String: Any]])?.first, "\(listed.text)")
                #expect(credential["counter"] as? Int == 10 && credential["state"] as? String == "active", "\(listed.text)")
            }
        }
    }

    @Test("Two challenges answered with one counter on two nodes at once, ten times over: exactly one acceptance, the other caught as a clone")
    func sameCounterBothNodes() async throws {
        let (a, b) = try await PushClusterTests.twoNodes()
        let key = try TestKey()
        try await a.withClient { nodeA in
            try await b.withClient { nodeB in
                for round in 1...10 {
                    // A fresh credential each round: the loser finds the counter already moved
                    // (verifications of one user take turns under the user's lock) and disables
                    // the credential as cloned, as on one node.
                    var credential = key.credential
                    credential.keyHandle = Array((0..<32).map { _ in UInt8.random(in: 0...255) })
                    let serial = try await FidoAPITests.enroll(a, credential, user: "user\(round)")
                    var roundKey = key
                    roundKey.credential = credential
                    let one = try await FidoAPITests.challenge(nodeA, a.host, user: "user\(round)")
                    let two = try await FidoAPITests.challenge(nodeB, a.host, user: "user\(round)")
                    let bodies = [try roundKey.assertion(one, user: "user\(round)", serial: serial, counter: 5),
                                  try roundKey.assertion(two, user: "user\(round)", serial: serial, counter: 5)]
                    let results = try await Self.concurrently([nodeA, nodeB], bodies, host: a.host)
                    #expect(results.filter { $0.hasPrefix("accept") }.count == 1, "round \(round): \(results)")
                    #expect(results.filter { $0.hasPrefix("reject") && $0.hasSuffix("the key was cloned") }.count == 1, "round \(round): \(results)")
                }
            }
        }
    }

    @Test("A counter accepted on node A and replayed with a fresh challenge on node B is refused and disables the credential on both")
    func clonedAcrossNodes() async throws {
        let (a, b) = try await PushClusterTests.twoNodes()
        let key = try TestKey()
        let serial = try await FidoAPITests.enroll(a, key)
        try await a.withClient { nodeA in
            try await b.withClient { nodeB in
                let first = try await FidoAPITests.challenge(nodeA, a.host)
                let accepted = try await nodeA.call(.post, "/v1/fido/verify", try key.assertion(first, user: "root", serial: serial, counter: 9),
                                                    bearer: a.host)
                #expect(accepted.string("result") == "accept", "\(accepted.text)")
                let stale = try await FidoAPITests.challenge(nodeB, a.host)
                let cloned = try await nodeB.call(.post, "/v1/fido/verify", try key.assertion(stale, user: "root", serial: serial, counter: 9),
                                                  bearer: a.host)
                #expect(cloned.string("result") == "reject" && cloned.string("reason")?.hasSuffix("the key was cloned") == true, "\(cloned.text)")
                #expect(cloned["failures"] as? Int == 1, "\(cloned.text)")
                let offered = try await FidoAPITests.challenge(nodeA, a.host)
                #expect((offered["credentials"] as? [Any])?.isEmpty == true, "node A offers the disabled credential no more: \(offered.text)")
                let listed = try await nodeA.call(.get, "/v1/users/root/fido", bearer: a.admin)
                #expect((listed["credentials"] as? [[String: Any]])?.first?["state"] as? String == "cloned", "\(listed.text)")
                let audit = try await nodeA.call(.get, "/v1/audit?user=root", bearer: a.admin)
                #expect(audit.text.contains("credential disabled"), "\(audit.text)")
            }
        }
    }
}
