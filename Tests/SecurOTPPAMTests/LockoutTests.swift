// The lockout arithmetic the store's failure rows and a host's offline codes share (Lockout).
import SecurOTPStore
import Testing

@Suite("Lockout arithmetic, one place for the store and the host's offline codes")
struct LockoutTests {
    @Test("deny failures lock for unlock_time seconds, 0 until lifted; deny=0 never locks")
    func lockedUntil() {
        #expect(Lockout.lockedUntil(failures: 2, deny: 3, unlockTime: 600, now: 1000) == 0)
        #expect(Lockout.lockedUntil(failures: 3, deny: 3, unlockTime: 600, now: 1000) == 1600)
        #expect(Lockout.lockedUntil(failures: 9, deny: 3, unlockTime: 600, now: 1000) == 1600)
        #expect(Lockout.lockedUntil(failures: 3, deny: 3, unlockTime: 0, now: 1000) == UserState.lockedUntilUnlocked)
        #expect(Lockout.lockedUntil(failures: 100, deny: 0, unlockTime: 600, now: 1000) == 0)
    }

    @Test("A count at the maximum stays there instead of trapping")
    func saturates() {
        #expect(Lockout.oneMore(4) == 5)
        #expect(Lockout.oneMore(Int.max) == Int.max)
        // An offline cache read back with the largest count (a damaged or hostile file) used
        // to trap the login process on its next failure.
        var cache = OfflineCache()
        cache.failures = Int.max
        let locked = cache.fail(now: 100, deny: 5, unlockTime: 60)
        #expect(locked)
        #expect(cache.failures == Int.max && cache.isLocked(at: 159) && !cache.isLocked(at: 160))
    }
}
