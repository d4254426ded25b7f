// deny= / unlock_time=: consecutive failures lock the user, even the right code is refused
// while locked, and the lock ends by `securotp unlock` or by time.
import Testing

@Suite("Lockout: deny, unlock_time and securotp unlock")
struct LockoutTests {
    /// A wrong 6-digit code for an HOTP token at counter 0 (default look-ahead 10).
    private func wrongHOTP(_ secret: String) throws -> String {
        try Oath.wrongHOTP(secret)
    }

    private func isLocked(_ box: Sandbox) throws -> Bool? {
        try box.listTokens("root").first?["user_locked"] as? Bool
    }

    @Test("deny=3: three failures lock; the right code is refused until securotp unlock")
    func lockUntilUnlock() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("locking", ["deny=3", "unlock_time=0"])
        let wrong = try wrongHOTP(token.secret)
        let right = try Oath.hotp(token.secret, counter: 0)

        for attempt in 1...3 {
            let failed = try box.login(service, "root", [wrong])
            #expect(failed.status == PAM.authError, "attempt \(attempt): \(failed)")
            #expect(try isLocked(box) == (attempt == 3), "locked after \(attempt) failures?")
        }
        let whileLocked = try box.login(service, "root", [right])
        #expect(whileLocked.status == PAM.authError, "the right code got through a lock: \(whileLocked)")
        #expect(whileLocked.prompts == [PAM.defaultPrompt], "a locked user is prompted like anyone else: \(whileLocked)")

        let unlock = try box.cli(["unlock", "root"])
        #expect(unlock.status == 0, "\(unlock)")
        #expect(unlock.stdout.contains("Unlocked root"), "\(unlock)")
        #expect(try isLocked(box) == false)

        // The code offered while locked was never checked, so it is still unused.
        let afterUnlock = try box.login(service, "root", [right])
        #expect(afterUnlock.status == PAM.success, "\(afterUnlock)")
    }

    @Test("Only consecutive failures count: a success resets the count")
    func successResetsFailureCount() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("locking", ["deny=3", "unlock_time=0"])
        let wrong = try wrongHOTP(token.secret)
        var counter: UInt64 = 0
        for round in 1...2 {
            for _ in 1...2 {
                let failed = try box.login(service, "root", [wrong])
                #expect(failed.status == PAM.authError, "round \(round): \(failed)")
            }
            let right = try box.login(service, "root", [try Oath.hotp(token.secret, counter: counter)])
            #expect(right.status == PAM.success, "round \(round): 2 failures < deny=3, the right code must work: \(right)")
            counter += 1
        }
        #expect(try isLocked(box) == false)
    }

    @Test("deny=2 unlock_time=60: the lock expires by itself (time moved ahead with libfaketime, not slept)")
    func lockExpires() async throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("expiring", ["deny=2", "unlock_time=60"])
        let wrong = try wrongHOTP(token.secret)
        let right = try Oath.hotp(token.secret, counter: 0)

        for attempt in 1...2 {
            let failed = try box.login(service, "root", [wrong])
            #expect(failed.status == PAM.authError, "attempt \(attempt): \(failed)")
        }
        let whileLocked = try box.login(service, "root", [right])
        #expect(whileLocked.status == PAM.authError, "locked for 60 s, yet accepted: \(whileLocked)")
        let stillLocked = try box.login(service, "root", [right], environment: try Clock.ahead(30))
        #expect(stillLocked.status == PAM.authError, "30 s into a 60 s lock, yet accepted: \(stillLocked)")

        #expect(try isLocked(box) == true, "the lock is listed while it holds")
        let afterExpiry = try box.login(service, "root", [right], environment: try Clock.ahead(65))
        #expect(afterExpiry.status == PAM.success, "\(afterExpiry)")
        #expect(try isLocked(box) == false, "the login after unlock_time cleared the lock")
    }
}
