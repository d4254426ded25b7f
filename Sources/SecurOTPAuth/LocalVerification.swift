import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// Local mode: the user's passcodes checked against the store on this host, through the
/// per-process connection (StoreCache). Never logs the code, the password or the seed.
struct LocalVerification: PasscodeCheck {
    let login: LoginContext
    private(set) var challenge: String?
    private(set) var matchedDigits: Int?
    /// The challenge's attempt was counted when it was issued (Store.issueChallenge).
    private var charged = false
    private var issuedAt: Int64 = 0

    init(_ login: LoginContext) { self.login = login }

    private var session: PAMSession { login.session }
    private var settings: Settings { login.settings }

    /// Where failures of this user are counted, if not under the user's own name: names NSS
    /// does not know share one decoy row.
    private var failureKey: String? { login.known ? nil : Store.unresolvedUsersKey }

    mutating func prepare() -> Preparation {
        do {
            let now = Int64(time(nil))
            let issue = try StoreCache.shared.withStore(settings.paths) { (store) throws(StoreError) -> ChallengeIssue?? in
                if settings.nullok, login.known, try !store.hasActiveTokens(user: login.user) { return .none }
                // A user with an OCRA token gets a fresh challenge in its suite's format, this
                // attempt counted before it is shown.
                return .some(login.known ? try store.issueChallenge(user: login.user, policy: settings.policy, now: now) : nil)
            }
            guard let issue else {
                session.debugLog("user \(login.shownUser) has no token; nullok: ignoring")
                return .finish(PAM_IGNORE)
            }
            switch issue {
            case .issued(_, let suite)?, .locked(let suite)?:
                guard let text = suite.randomChallenge() else {
                    session.log(LOG_ERR, "no randomness for an OCRA challenge; denying \(login.shownUser)")
                    return .finish(PAM_AUTHINFO_UNAVAIL)
                }
                challenge = text
            case nil:
                break
            }
            charged = issue != nil
            issuedAt = now
            return .ask
        } catch {
            session.log(LOG_ERR, "token store unavailable, denying \(login.shownUser): \(error.message)")
            return .finish(PAM_AUTHINFO_UNAVAIL)
        }
    }

    mutating func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool) -> Int32 {
        let now = Int64(time(nil))
        // A challenge answered too late is not checked; its attempt stays counted.
        let live = now - issuedAt <= ChallengeIssue.lifetime ? challenge : nil
        if challenge != nil, live == nil {
            session.log(LOG_NOTICE, "OCRA challenge for \(login.shownUser) answered after more than \(ChallengeIssue.lifetime) s; not checked")
        }
        return finish(store { (store) throws(StoreError) in
            try store.verify(user: login.user, input: input, codeAtEnd: settings.forwardPass, policy: settings.policy, now: now,
                             failureKey: failureKey, countsFailure: countsFailure, challenge: live, charged: charged)
        }, dialogues: 2)
    }

    /// Runs one store operation; nil (logged) when the store is unavailable.
    private func store<R>(_ body: (Store) throws(StoreError) -> R) -> R? {
        do {
            return try StoreCache.shared.withStore(settings.paths, body)
        } catch {
            session.log(LOG_ERR, "token store unavailable, denying \(login.shownUser): \(error.message)")
            return nil
        }
    }

    /// Turns a verification result into a PAM code, running the follow-up dialogues a result
    /// can ask for (next tokencode, new PIN) at most `dialogues` times.
    private mutating func finish(_ result: VerifyResult?, dialogues: Int) -> Int32 {
        guard let result else { return PAM_AUTHINFO_UNAVAIL }
        let report: StepReport
        switch result.outcome {
        case .accepted(let serial, let digits):
            matchedDigits = digits
            report = StepReport(.accepted(serial: serial), note: result.note)
        case .acceptedRecoveryCode(let remaining):
            report = StepReport(.acceptedRecoveryCode, note: "\(remaining) left", info: DialogueText.recoveryCodeAccepted(remaining: remaining))
        case .locked:
            report = StepReport(.locked, note: "", failures: result.failures)
        case .replayed(let serial):
            report = StepReport(.replayed, note: "token \(serial)", failures: result.failures, lockedNow: result.lockedNow,
                                lockDuration: lockDuration, info: DialogueText.replayed)
        case .rejected:
            report = StepReport(.rejected, note: result.note, failures: result.failures, lockedNow: result.lockedNow, lockDuration: lockDuration)
        case .nextCodeRequired(let serial, let position):
            guard dialogues > 0 else { return PAM_AUTH_ERR }
            session.log(LOG_NOTICE, "asking \(login.shownUser) for the next code of token \(serial) (\(result.note))")
            return nextCodeDialogue(serial: serial, position: position, dialogues: dialogues - 1)
        case .newPINRequired(let serial, let mode):
            guard dialogues > 0 else { return PAM_AUTH_ERR }
            session.log(LOG_NOTICE, "\(login.shownUser) must set a new PIN for token \(serial)")
            return newPINDialogue(serial: serial, mode: mode, dialogues: dialogues - 1)
        }
        return session.conclude(report, user: login.shownUser)
    }

    private var lockDuration: String {
        settings.policy.unlockTime > 0 ? "for \(settings.policy.unlockTime) s" : "until securotp unlock \(login.shownUser)"
    }

    /// SecurID's next-tokencode mode: the code just typed lay outside the window (or too many
    /// failures preceded it); the code that follows it on the token settles it.
    private mutating func nextCodeDialogue(serial: String, position: Int64, dialogues: Int) -> Int32 {
        let (code, response) = session.askSecret(DialogueText.nextCode)
        guard let response else { return code }
        defer { securotp_pam_free_response(response) }
        let now = Int64(time(nil))
        return finish(store { (store) throws(StoreError) in
            try store.verifyNextCode(user: login.user, serial: serial, position: position, input: bytes(response), policy: settings.policy, now: now)
        }, dialogues: dialogues)
    }

    /// New-PIN mode: the tokencode proved the token; the user picks a PIN (asked twice, checked
    /// against the rules), then logs in with a passcode made with it.
    private mutating func newPINDialogue(serial: String, mode: PINMode, dialogues: Int) -> Int32 {
        let (entryCode, entry) = session.askNewPIN(DialogueText.newPIN(mode), again: DialogueText.newPINAgain, user: login.shownUser, serial: serial)
        guard let entry else { return entryCode }
        defer { securotp_pam_free_response(entry) }
        let pin = bytes(entry)
        if let problem = PINRules.problem(pin, mode: mode) {
            session.error(DialogueText.pinRefused(problem))
            session.log(LOG_NOTICE, "new PIN for \(login.shownUser) (token \(serial)) refused by the PIN rules")
            return PAM_AUTH_ERR
        }
        guard store({ (store) throws(StoreError) in try store.setPIN(user: login.user, serial: serial, pin: pin) }) != nil else {
            return PAM_AUTHINFO_UNAVAIL
        }
        session.log(LOG_NOTICE, "\(login.shownUser) set a new PIN for token \(serial)")
        let (code, response) = session.askSecret(DialogueText.pinSet(mode))
        guard let response else { return code }
        defer { securotp_pam_free_response(response) }
        let now = Int64(time(nil))
        return finish(store { (store) throws(StoreError) in
            try store.verify(user: login.user, input: bytes(response), codeAtEnd: false, policy: settings.policy, now: now, failureKey: failureKey)
        }, dialogues: dialogues)
    }
}
