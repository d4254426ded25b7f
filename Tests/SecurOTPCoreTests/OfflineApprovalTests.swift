import Foundation
import SecurOTPCore
import Testing

/// Offline approval (docs/push.md, "Offline approval") against Tests/Vectors/offline.json,
/// written by Tests/Vectors/offline_vectors.py with Python's hashlib/hmac only: the challenge
/// the host and the validator derive from a request, and the OCRA response a device makes.
@Suite struct OfflineApprovalTests {
    static var vectors: [String: Any] { (try? VectorFile.load("offline.json")) ?? [:] }

    static func secret(_ value: Any?) throws -> SecretBytes {
        let text = try #require(value as? String)
        return SecretBytes(copying: try #require(Base64.decode(text, .url)))
    }

    @Test func theSuiteIsTheContractsAndParses() throws {
        #expect(Self.vectors.string("suite") == OfflineApproval.suiteText)
        _ = try OCRASuite(OfflineApproval.suiteText)
    }

    @Test func challengesAndResponsesMatchTheOracle() throws {
        let cases = Self.vectors.list("cases")
        try #require(cases.count >= 8)
        var challenges: Set<String> = []
        for item in cases {
            let context = try #require(item.table("context"))
            // The device id never enters the challenge: every device answers the same one.
            var statement = PushApprovalTests.statement(context.merging(["device": "dv0123456789abcdef"]) { $1 })
            let challenge = OfflineApproval.challenge(statement)
            #expect(challenge == item.string("challenge"), "\(item.string("name") ?? "?")")
            statement.device = ""
            #expect(OfflineApproval.challenge(statement) == challenge)
            challenges.insert(challenge)
            for response in item.list("responses") {
                let secret = try Self.secret(response["secret"])
                let expected = try #require(response.string("response"))
                #expect(String(decoding: try OfflineApproval.response(secret: secret, challenge: challenge), as: UTF8.self) == expected)
                #expect(OfflineApproval.matches(expected, secret: secret, challenge: challenge))
            }
        }
        // Each field the contract names changes the challenge.
        #expect(challenges.count == cases.count)
    }

    @Test func responsesToEdgeChallengesMatchTheOracle() throws {
        let responses = Self.vectors.list("responses")
        try #require(responses.count >= 5)
        for item in responses {
            let challenge = try #require(item.string("challenge"))
            let secret = try Self.secret(item["secret"])
            #expect(String(decoding: try OfflineApproval.response(secret: secret, challenge: challenge), as: UTF8.self)
                    == item.string("response"), "\(challenge)")
        }
    }

    @Test func wrongAnswersDoNotMatch() throws {
        let item = try #require(Self.vectors.list("cases").first)
        let challenge = try #require(item.string("challenge"))
        let response = try #require(item.list("responses").first)
        let secret = try Self.secret(response["secret"])
        let right = try #require(response.string("response"))
        #expect(OfflineApproval.matches(right, secret: secret, challenge: challenge))
        var wrong = Array(right.utf8)
        wrong[7] = wrong[7] == UInt8(ascii: "9") ? UInt8(ascii: "0") : wrong[7] + 1
        #expect(!OfflineApproval.matches(String(decoding: wrong, as: UTF8.self), secret: secret, challenge: challenge))
        for answer in ["", right + "0", String(right.dropLast()), " " + right, String(right.prefix(4)) + " " + String(right.suffix(4))] {
            #expect(!OfflineApproval.matches(answer, secret: secret, challenge: challenge), "\(answer)")
        }
        // Another device's secret, and another request's challenge.
        #expect(!OfflineApproval.matches(right, secret: SecretBytes(copying: [UInt8](repeating: 7, count: 32)), challenge: challenge))
        let other = try #require(Self.vectors.list("cases").last?.string("challenge"))
        #expect(!OfflineApproval.matches(right, secret: secret, challenge: other))
        // A secret of the wrong size is refused, not used.
        #expect(throws: OCRAError.self) { try OfflineApproval.response(secret: SecretBytes(count: 16), challenge: challenge) }
    }

    @Test func challengesAreTypedAndShownInGroupsOfFour() {
        #expect(OfflineApproval.grouped("12345678") == "1234 5678")
        #expect(OfflineApproval.normalizedChallenge("1234 5678") == "12345678")
        #expect(OfflineApproval.normalizedChallenge("1234-5678") == "12345678")
        #expect(OfflineApproval.normalizedChallenge("00000000") == "00000000")
        for bad in ["", "1234567", "123456789", "1234 567a", "１２３４５６７８", "1234\t5678"] {
            #expect(OfflineApproval.normalizedChallenge(bad) == nil, "\(bad)")
        }
    }
}
