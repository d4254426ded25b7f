import SecurOTPEngine
import Testing

/// The one failure and lockout rule every way in uses (docs/design.md "Where lockout is decided").
@Suite("Lockout: one rule for codes, device approvals, FIDO assertions and offline codes")
struct LockoutRuleTests {
    @Test("One more failure: counts up, locks at deny for unlock_time (0: until lifted), never at deny=0")
    func counting() {
        let one = Lockout.afterFailure(.clear, deny: 3, unlockTime: 60, now: 1000)
        #expect(one == UserState(failures: 1, lockedUntil: 0))
        let three = Lockout.afterFailure(UserState(failures: 2, lockedUntil: 0), deny: 3, unlockTime: 60, now: 1000)
        #expect(three == UserState(failures: 3, lockedUntil: 1060))
        let forever = Lockout.afterFailure(UserState(failures: 2, lockedUntil: 0), deny: 3, unlockTime: 0, now: 1000)
        #expect(forever.lockedUntil == UserState.lockedUntilUnlocked)
        #expect(Lockout.afterFailure(UserState(failures: 99, lockedUntil: 0), deny: 0, unlockTime: 60, now: 1000).lockedUntil == 0)
        #expect(Lockout.afterFailure(UserState(failures: .max, lockedUntil: 0), deny: 3, unlockTime: 60, now: 1).failures == .max)
    }

    @Test("A lock in force does not move, but the attempt counts; a lock that ran out starts the count again")
    func locks() {
        let locked = UserState(failures: 3, lockedUntil: 1060)
        #expect(Lockout.afterFailure(locked, deny: 3, unlockTime: 600, now: 1059) == UserState(failures: 4, lockedUntil: 1060))
        #expect(Lockout.afterFailure(locked, deny: 3, unlockTime: 600, now: 1060) == UserState(failures: 1, lockedUntil: 0))
    }

    @Test("An acceptance clears a count or a lock that ran out, never a lock in force")
    func success() {
        #expect(!Lockout.successClears(.clear, now: 5))
        #expect(Lockout.successClears(UserState(failures: 2, lockedUntil: 0), now: 5))
        #expect(Lockout.successClears(UserState(failures: 3, lockedUntil: 5), now: 5))
        #expect(!Lockout.successClears(UserState(failures: 3, lockedUntil: 6), now: 5))
        #expect(!Lockout.successClears(UserState(failures: 3, lockedUntil: UserState.lockedUntilUnlocked), now: 5))
    }
}
