import Foundation
import SecurOTPCore
import Testing

/// The validator issues OCRA challenges and remembers them; a host only shows them (issue 12 §1;
/// docs/security.md "OCRA challenges"). Before this rule a host chose the challenge and sent
/// it with the response, and the same (challenge, response) pair was accepted again and again.
@Suite("Validator API: OCRA challenges are issued by the validator, answered once")
struct OCRAChallengeAPITests {
    static let suite = "OCRA-1:HOTP-SHA1-6:QN08"

    static func response(_ secret: String, to challenge: String) throws -> String {
        let key = try #require(Base32.decode(Array(secret.utf8)))
        return String(decoding: try OCRA.response(suite: OCRASuite(suite), key: key, question: challenge), as: UTF8.self)
    }

    @Test("A host-chosen challenge is never accepted; the issued one is accepted once", arguments: Backend.tested)
    func issuedOnceAndAnsweredOnce(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.store.policy.deny = 0 }
        try await fixture.withClient { client in
            let (secret, serial) = try await HostAPITests.enroll(client, fixture, "olga", ["kind": "ocra", "suite": Self.suite])

            // The attack: a host picks a challenge and replays a response it saw once.
            let chosen = try Self.response(secret, to: "12345678")
            for _ in 1...2 {
                let replayed = try await client.call(.post, "/v1/verify", ["user": "olga", "passcode": chosen, "challenge": "12345678"],
                                                     bearer: fixture.host)
                #expect(replayed.string("result") == "reject", "a host-chosen challenge was accepted: \(replayed.text)")
            }

            let preflight = try await client.call(.post, "/v1/preflight", ["user": "olga"], bearer: fixture.host)
            let offer = try #require(preflight["ocra_challenge"] as? [String: Any], "\(preflight.text)")
            let id = try #require(offer["id"] as? String)
            let challenge = try #require(offer["challenge"] as? String)
            #expect(challenge.count == 8 && challenge.allSatisfy(\.isNumber) && offer["digits"] as? Int == 6, "\(preflight.text)")
            let response = try Self.response(secret, to: challenge)

            let accepted = try await client.call(.post, "/v1/verify", ["user": "olga", "passcode": response, "challenge_id": id], bearer: fixture.host)
            #expect(accepted.string("result") == "accept" && accepted.string("serial") == serial, "\(accepted.text)")
            let again = try await client.call(.post, "/v1/verify", ["user": "olga", "passcode": response, "challenge_id": id], bearer: fixture.host)
            #expect(again.string("result") == "reject", "an issued challenge is answered once: \(again.text)")
        }
    }

    @Test("An issued challenge counts as an attempt until it is answered: abandoned ones lock at deny", arguments: Backend.tested)
    func abandonedChallengesCount(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend) { $0.store.policy.deny = 2 }
        try await fixture.withClient { client in
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "pavel", ["kind": "ocra", "suite": Self.suite])
            for _ in 1...2 {
                let abandoned = try await client.call(.post, "/v1/preflight", ["user": "pavel"], bearer: fixture.host)
                #expect(abandoned["ocra_challenge"] is [String: Any], "\(abandoned.text)")
            }
            // The third login gets a challenge that looks the same, but the user is locked now.
            let preflight = try await client.call(.post, "/v1/preflight", ["user": "pavel"], bearer: fixture.host)
            let offer = try #require(preflight["ocra_challenge"] as? [String: Any], "\(preflight.text)")
            let response = try Self.response(secret, to: try #require(offer["challenge"] as? String))
            let locked = try await client.call(.post, "/v1/verify", ["user": "pavel", "passcode": response, "challenge_id": try #require(offer["id"] as? String)],
                                               bearer: fixture.host)
            #expect(locked.string("result") == "locked", "\(locked.text)")
        }
    }
}
