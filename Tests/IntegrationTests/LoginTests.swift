// Logging in through the real libpam with codes from oathtool: TOTP, HOTP look-ahead, other
// algorithms and lengths, replay refusal and PAM_SILENT.
import Foundation
import SecurOTPCore
import Testing

@Suite("Login: codes from oathtool through libpam and pam_securotp.so")
struct LoginTests {
    @Test("The current TOTP code is accepted; a wrong code is refused with the same prompt")
    func totpRightAndWrong() async throws {
        let box = try Sandbox()
        let token = try box.enroll("root")
        #expect(token.kind == "totp" && token.digits == 6 && token.period == 30 && token.algorithm == "SHA1")
        let service = try box.service()

        try await Clock.waitForFreshStep()
        let wrong = try box.login(service, "root", [try Oath.wrongTOTP(token.secret)])
        #expect(wrong.status == PAM.authError, "\(wrong)")
        #expect(wrong.prompts == [PAM.defaultPrompt], "\(wrong)")
        #expect(wrong.infos.isEmpty, "a plain wrong code gets no hint: \(wrong)")

        let code = try Oath.totp(token.secret)
        let right = try box.login(service, "root", [code])
        #expect(right.status == PAM.success, "\(right)")
        #expect(right.prompts == [PAM.defaultPrompt], "\(right)")
        #expect(right.result == "Success", "\(right)")
    }

    @Test("A TOTP code works exactly once: the replay is refused with an explanation")
    func totpReplayRefused() async throws {
        let box = try Sandbox()
        let token = try box.enroll("root")
        let service = try box.service()

        try await Clock.waitForFreshStep()
        let code = try Oath.totp(token.secret)
        let first = try box.login(service, "root", [code])
        try #require(first.status == PAM.success, "\(first)")

        let replay = try box.login(service, "root", [code])
        #expect(replay.status == PAM.authError, "\(replay)")
        #expect(replay.infos == [PAM.replayInfo], "\(replay)")
        // The previous step's code is also spent: the accepted step moved past it.
        let earlier = try Oath.totp(token.secret, at: Int64(Clock.now()) - 30)
        if earlier != code {
            let older = try box.login(service, "root", [earlier])
            #expect(older.status == PAM.authError, "\(older)")
        }
    }

    @Test("HOTP: a code 3 ahead of the counter is accepted, then it and all earlier codes are refused")
    func hotpLookahead() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        #expect(token.kind == "hotp" && token.counter == 0 && token.period == nil)
        let service = try box.service("hotp", ["deny=0"])

        let codes = try (0...16).map { try Oath.hotp(token.secret, counter: UInt64($0)) }
        let ahead = try box.login(service, "root", [codes[3]])
        #expect(ahead.status == PAM.success, "code at counter 3 (look-ahead 10): \(ahead)")
        #expect(try box.listTokens("root").first?["counter"] as? Int == 4, "the counter moves past the accepted code")

        for counter in 0...3 where codes[counter] != codes[4] {
            let spent = try box.login(service, "root", [codes[counter]])
            #expect(spent.status == PAM.authError, "code at counter \(counter) after 3 was accepted: \(spent)")
            #expect(spent.infos == [PAM.replayInfo], "counter \(counter): \(spent)")
        }
        let next = try box.login(service, "root", [codes[4]])
        #expect(next.status == PAM.success, "the next code (counter 4): \(next)")

        // hotp_lookahead=3 as a module argument: expected counter is now 5; 5+4 is too far, 5+3 is fine.
        // (resync_window=0: no next-code dialogue for codes beyond the look-ahead.)
        let narrow = try box.service("hotp-narrow", ["deny=0", "hotp_lookahead=3", "resync_window=0"])
        if codes[9] != codes[8] {
            let tooFar = try box.login(narrow, "root", [codes[9]])
            #expect(tooFar.status == PAM.authError, "counter 9 is beyond look-ahead 3 from 5: \(tooFar)")
            #expect(tooFar.infos.isEmpty, "\(tooFar)")
        }
        let withinReach = try box.login(narrow, "root", [codes[8]])
        #expect(withinReach.status == PAM.success, "counter 8 is within look-ahead 3 from 5: \(withinReach)")

        // With resync (the default), a code beyond the look-ahead asks for the token's next
        // code; the pair is accepted and moves the counter past both.
        let resync = try box.service("hotp-resync", ["deny=0", "hotp_lookahead=3"])
        let far = try (20...21).map { try Oath.hotp(token.secret, counter: UInt64($0)) }
        let pair = try box.login(resync, "root", [far[0], far[1]])
        #expect(pair.status == PAM.success, "code 20 then 21: \(pair)")
        #expect(pair.prompts.count == 2 && pair.prompts[1].contains("Wait for the code on your token to change"), "\(pair)")
        #expect(try box.listTokens("root").first?["counter"] as? Int == 22)
        let notNext = try box.login(resync, "root", [try Oath.hotp(token.secret, counter: 30), try Oath.hotp(token.secret, counter: 32)])
        #expect(notNext.status == PAM.authError, "30 then 32 is not a consecutive pair: \(notNext)")
    }

    @Test("SHA256, 8 digits, 60 s steps: only the matching code is accepted")
    func sha256EightDigitsSixtySeconds() async throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--algorithm", "SHA256", "--digits", "8", "--period", "60"])
        #expect(token.algorithm == "SHA256" && token.digits == 8 && token.period == 60, "\(token)")
        let uri = try OTPAuthURI.parse(token.uri)
        #expect(uri.parameters == OATHParameters(kind: .totp, algorithm: .sha256, digits: 8, period: 60))
        let service = try box.service()

        try await Clock.waitForFreshStep(period: 60)
        let now = Int64(Clock.now())
        let valid = try Oath.totpWindow(token.secret, algorithm: "SHA256", digits: 8, period: 60, around: now)
        let lookalikes = [
            try Oath.totp(token.secret, algorithm: "SHA256", digits: 8, period: 30, at: now), // wrong period
            try Oath.totp(token.secret, algorithm: "SHA1", digits: 8, period: 60, at: now),   // wrong hash
            String(try Oath.totp(token.secret, algorithm: "SHA256", digits: 8, period: 60, at: now).suffix(6)), // too short
        ]
        for lookalike in lookalikes where !valid.contains(lookalike) {
            let refused = try box.login(service, "root", [lookalike])
            #expect(refused.status == PAM.authError, "\(lookalike) is not a code of this token: \(refused)")
        }
        let code = try Oath.totp(token.secret, algorithm: "SHA256", digits: 8, period: 60)
        let accepted = try box.login(service, "root", [code])
        #expect(accepted.status == PAM.success, "\(accepted)")
    }

    @Test("PAM_SILENT suppresses the replay message, not the prompt")
    func silentSuppressesReplayInfo() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service()
        let code = try Oath.hotp(token.secret, counter: 0)
        let first = try box.login(service, "root", [code])
        try #require(first.status == PAM.success, "\(first)")

        let silent = try box.login(service, "root", [code], silent: true)
        #expect(silent.status == PAM.authError, "\(silent)")
        #expect(silent.prompts == [PAM.defaultPrompt], "\(silent)")
        #expect(silent.infos.isEmpty, "PAM_SILENT still showed: \(silent)")

        let loud = try box.login(service, "root", [code])
        #expect(loud.status == PAM.authError, "\(loud)")
        #expect(loud.infos == [PAM.replayInfo], "without PAM_SILENT: \(loud)")
    }
}
