import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// The host's side of offline codes: reading the user's cache before a login, checking an
/// answer against it while the validator is unreachable, and keeping what the validator sends
/// after an online login. Every change is made under the cache directory's lock and is on disk
/// before the login's result is returned, so a code is accepted at most once on this host.
struct HostOfflineCodes {
    let login: LoginContext
    let caches: OfflineCacheDirectory
    /// The host credential's hash (ValidatorClient.pepper).
    let pepper: [UInt8]

    private var session: PAMSession { login.session }
    private var user: String { login.user }
    private var source: String { " [offline]" }

    /// The longest code length in the user's cache when it can be used now; nil when there is
    /// no cache, it holds no codes, it is locked, or it is unreadable (logged).
    func usableCodeDigits() -> Int? {
        do throws(StoreError) {
            let cache = try caches.withLock(create: false) { (exists) throws(StoreError) -> OfflineCache? in
                exists ? try caches.load(user: user, pepper: pepper) : nil
            }
            guard let cache, !cache.isEmpty else { return nil }
            guard !cache.isLocked(at: Int64(time(nil))) else {
                session.log(.offlineCodesLocked, LOG_NOTICE, "offline codes of \(login.shownUser) are locked after \(Wording.count(cache.failures, "consecutive failure"))\(source)")
                return nil
            }
            return cache.codes.map { $0.digits }.max()
        } catch {
            session.log(.offlineCodesUnusable, LOG_ERR, "offline codes of \(login.shownUser) unusable: \(error.message)")
            return nil
        }
    }

    /// What to report with the next online request (empty when nothing was used offline).
    func pendingUsage() -> [OfflineCache.Usage] {
        do throws(StoreError) {
            return try caches.withLock(create: false) { (exists) throws(StoreError) -> [OfflineCache.Usage] in
                exists ? try caches.load(user: user, pepper: pepper).used : []
            }
        } catch {
            session.log(.offlineCodesUnusable, LOG_ERR, "offline codes of \(login.shownUser) unusable: \(error.message)")
            return []
        }
    }

    /// Checks `input` against the cache. Returns the PAM code and, on acceptance, how many
    /// trailing characters were the code (forward_pass).
    func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool) -> (code: Int32, digits: Int?) {
        let shown = login.shownUser
        let policy = login.settings.policy
        let now = Int64(time(nil))
        do throws(StoreError) {
            return try caches.withLock(create: false) { (exists) throws(StoreError) -> (code: Int32, digits: Int?) in
                var cache = exists ? try caches.load(user: user, pepper: pepper) : OfflineCache()
                if cache.isLocked(at: now) {
                    session.log(.offlineCodesLocked, LOG_NOTICE, "offline codes of \(shown) are locked after \(Wording.count(cache.failures, "consecutive failure")); code not checked\(source)")
                    return (PAM_AUTH_ERR, nil)
                }
                if let match = cache.match(input, pepper: pepper, codeAtEnd: login.settings.forwardPass) {
                    cache.consume(serial: match.serial, counter: match.counter)
                    try caches.save(cache, user: user, pepper: pepper)
                    let left = cache.codes.count(where: { $0.serial == match.serial })
                    let report = StepReport(.accepted(serial: match.serial), note: "offline code, \(left) left on this host", source: source)
                    return (session.conclude(report, user: shown), match.digits)
                }
                // try_first_pass's password is not the user's miss.
                guard countsFailure else { return (PAM_AUTH_ERR, nil) }
                let lockedNow = cache.fail(now: now, deny: policy.deny, unlockTime: policy.unlockTime)
                try caches.save(cache, user: user, pepper: pepper)
                let until = policy.unlockTime > 0 ? "for \(policy.unlockTime) s" : "until the validator is reachable"
                let report = StepReport(.rejected, note: "not one of this host's offline codes", failures: cache.failures, lockedNow: lockedNow,
                                        lockDuration: until, source: source)
                return (session.conclude(report, user: shown), nil)
            }
        } catch {
            session.log(.offlineCodesUnusable, LOG_ERR, "offline codes of \(shown) unusable: \(error.message); denying")
            return (PAM_AUTH_ERR, nil)
        }
    }

    /// The validator's policy leaves otp out of the user's methods: offline codes are passcodes,
    /// so the user's cache on this host goes, lest cutting the host off bring them back
    /// (docs/design.md, "Login methods in remote mode"). Codes used offline are not reported
    /// any more: the validator dropped this host's reservations of the user on the preflight
    /// that left otp out, so none of them can be accepted online later.
    func discard() {
        do throws(StoreError) {
            let removed = try caches.withLock(create: false) { (exists) throws(StoreError) -> Bool in
                exists ? try caches.remove(user: user) : false
            }
            if removed {
                session.log(.offlineCodesDropped, LOG_NOTICE, "the validator's policy leaves otp out of \(login.shownUser)'s methods; deleted the offline codes on this host")
            }
        } catch {
            session.log(.offlineCodesUnusable, LOG_ERR, "offline codes of \(login.shownUser) could not be deleted: \(error.message)")
        }
    }

    /// After an online answer: the usage sent was withdrawn by the validator, an accepted
    /// login clears the offline failures, and fresh codes join the cache.
    func keep(_ answer: VerifyAnswer, reported: [OfflineCache.Usage]) {
        if answer.offlineUnreadable {
            session.log(.validatorOfflineCodesUnreadable, LOG_WARNING, "the validator's offline codes for \(login.shownUser) were unreadable; ignoring them")
        }
        let accepted = answer.result == .accept
        guard !reported.isEmpty || !answer.offline.isEmpty || accepted else { return }
        do throws(StoreError) {
            let create = !answer.offline.isEmpty
            let count = try caches.withLock(create: create) { (exists) throws(StoreError) -> Int? in
                guard exists else { return nil }
                var cache: OfflineCache
                do throws(StoreError) {
                    cache = try caches.load(user: user, pepper: pepper)
                } catch {
                    guard create else { throw error }
                    // An unusable file is replaced by what the validator sends now.
                    session.log(.offlineCacheReplaced, LOG_WARNING, error.message)
                    cache = OfflineCache()
                }
                let before = cache
                cache.absorb(reported: reported, refills: answer.offline)
                if accepted { cache.clearFailures() }
                if cache != before { try caches.save(cache, user: user, pepper: pepper) }
                return cache.codes.count
            }
            if let count, create || !reported.isEmpty {
                session.debugLog("offline codes of \(login.shownUser) on this host: \(count)")
            }
        } catch {
            session.log(.offlineCodesNotKept, LOG_ERR, "cannot keep offline codes for \(login.shownUser): \(error.message)")
        }
    }
}
