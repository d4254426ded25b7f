// Attempts that open a dialogue are counted before the user answers, through the real module
// (issue 12 §1 and §2; docs/security.md "Every attempt counts"). On the code before these
// rules, each abandoned login below counted nothing and the last login succeeded.
import Foundation
import Testing

@Suite("Every attempt counts: abandoned OCRA challenges and resync dialogues")
struct ChargedAttemptLoginTests {
    private func isLocked(_ box: Sandbox) throws -> Bool? {
        try box.listTokens("root").first?["user_locked"] as? Bool
    }

    @Test("OCRA: logins abandoned at the challenge count; at deny the right response is refused")
    func abandonedChallengesCount() throws {
        let box = try Sandbox()
        let suite = "OCRA-1:HOTP-SHA1-6:QN08"
        let result = try box.cli(["enroll", "root", "--ocra", suite, "--format", "json"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let key = try #require(json?["key_hex"] as? String, "\(result)")
        let service = try box.service("ocra", ["deny=2", "unlock_time=0"])
        for attempt in 1...2 {
            // No answer: the conversation fails at the challenge prompt (a cancelled login).
            let abandoned = try box.login(service, "root", [])
            #expect(abandoned.status != PAM.success, "attempt \(attempt): \(abandoned)")
            #expect(abandoned.prompts.first?.hasPrefix("Challenge ") == true, "attempt \(attempt): \(abandoned)")
        }
        let answered = try box.login(service, "root", [try TokenFlowTests.ocraOracle(box, suite: suite, keyHex: key)])
        #expect(answered.status == PAM.authError, "two abandoned challenges reached deny=2: \(answered)")
        #expect(try isLocked(box) == true)
        // After an unlock the same oracle logs in: the refusal above was the lock, not the response.
        #expect(try box.cli(["unlock", "root"]).status == 0)
        let unlocked = try box.login(service, "root", [try TokenFlowTests.ocraOracle(box, suite: suite, keyHex: key)])
        #expect(unlocked.status == PAM.success, "\(unlocked)")
    }

    @Test("OCRA: suites with fewer than 10^8 challenges and no counter or time are refused at enrollment")
    func smallChallengeSpacesAreRefused() throws {
        let box = try Sandbox()
        for suite in ["OCRA-1:HOTP-SHA1-6:QN04", "OCRA-1:HOTP-SHA1-6:QA05"] {
            let result = try box.cli(["enroll", "root", "--ocra", suite])
            #expect(result.status == 65, "\(result)")
            #expect(result.stderr.contains("QN08"), "the message names the rule: \(result)")
        }
    }

    @Test("A code in the resync band counts before the next code is asked; abandoning there locks at deny")
    func abandonedResyncDialogueCounts() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("band", ["deny=1", "unlock_time=0"])
        // Counter 30: past the look-ahead of 10, inside the resync band of 50.
        let band = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 30)])
        #expect(band.prompts.count == 2, "the next code was asked for: \(band)")
        #expect(band.status != PAM.success, "\(band)")
        let right = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(right.status == PAM.authError, "the abandoned band hit counted and reached deny=1: \(right)")
        #expect(try isLocked(box) == true)
    }
}
