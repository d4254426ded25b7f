import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// pam_sm_authenticate for pam_securotp.so. Deny by default: every path that is not an
/// accepted code ends in a failure code and a syslog line; the only ways out without a code
/// are the opt-in PAM_IGNORE of `nullok` and `groups=`, which never grant access by themselves.
public enum Authenticator {
    static let forwardPassPrompt = "Password & verification code: "
    /// Codes are 6–8 digits; forward_pass adds a password. Anything longer is not a passcode.
    static let maxInput = 1024

    public static func authenticate(handle: OpaquePointer, flags: Int32, arguments: [String]) -> Int32 {
        let settings: Settings
        do {
            settings = try Settings.fromModuleArguments(arguments)
        } catch {
            securotp_pam_syslog(handle, LOG_ERR, "configuration error: \(error.message)")
            return PAM_SERVICE_ERR
        }
        let session = PAMSession(handle: handle, silent: flags & Int32(bitPattern: UInt32(PAM_SILENT)) != 0, debug: settings.debug)

        let (userCode, userName) = session.user()
        guard let user = userName else {
            session.log(LOG_ERR, "cannot determine the user name: \(String(cString: pam_strerror(handle, userCode)))")
            return userCode == PAM_CONV_AGAIN ? PAM_INCOMPLETE : userCode
        }
        let validName = (try? Store.validate(user: user)) != nil
        // Tokens, failures and locks live under NSS's spelling of the name. A name NSS does not
        // know (or cannot answer for right now) is never let through by nullok or groups=; it
        // is prompted and refused like everyone else, its failures counted on one decoy row.
        let account = validName ? UnixAccount.resolve(user) : nil
        let storeUser = account?.name ?? user
        let shownUser = validName ? user : "(invalid user name)"

        if !settings.groups.isEmpty, let account, let groups = account.groupNames(), !settings.groups.covers(groups: groups) {
            session.debugLog("user \(shownUser) is outside groups=; not asking for a code")
            return PAM_IGNORE
        }

        var challenge: String?
        do {
            // The store is checked before prompting, so a broken installation fails at once
            // (and is logged) instead of after the user typed a code. A user with an OCRA
            // token gets a fresh challenge in its suite's format.
            let (hasTokens, suite) = try StoreCache.shared.withStore(settings.paths) { (store) throws(StoreError) in
                (settings.nullok && account != nil ? try store.hasActiveTokens(user: storeUser) : true,
                 account != nil ? try store.ocraSuite(user: storeUser, now: Int64(time(nil))) : nil)
            }
            challenge = suite?.randomChallenge()
            if !hasTokens {
                session.debugLog("user \(shownUser) has no token; nullok: ignoring")
                return PAM_IGNORE
            }
        } catch {
            session.log(LOG_ERR, "token store unavailable, denying \(shownUser): \(error.message)")
            return PAM_AUTHINFO_UNAVAIL
        }

        var policy = Verification(session: session, settings: settings, user: storeUser, shownUser: shownUser,
                                  failureKey: account == nil ? Store.unresolvedUsersKey : nil, challenge: challenge)

        if settings.useFirstPass || settings.tryFirstPass, let previous = session.item(PAM_AUTHTOK) {
            let bytes = UnsafeRawPointer(previous).assumingMemoryBound(to: UInt8.self)
            // try_first_pass usually hands over a password, not a code: a miss there is not a
            // failure of the user's, and the prompt that follows gets the real attempt.
            let result = policy.check(UnsafeBufferPointer<UInt8>(start: bytes, count: strlen(previous)), countsFailure: settings.useFirstPass)
            if result == PAM_SUCCESS || settings.useFirstPass || result == PAM_AUTHINFO_UNAVAIL { return result }
        } else if settings.useFirstPass {
            session.log(LOG_NOTICE, "use_first_pass: no earlier password for \(shownUser); denying")
            return PAM_AUTH_ERR
        }

        var prompt = settings.forwardPass && settings.prompt == Settings().prompt ? forwardPassPrompt : settings.prompt
        if let challenge { prompt = "Challenge \(challenge). " + prompt }
        let (conversationCode, response) = session.askSecret(prompt)
        guard let response else {
            session.log(LOG_ERR, "conversation failed for \(shownUser): \(String(cString: pam_strerror(handle, conversationCode)))")
            return conversationCode
        }
        defer { securotp_pam_free_response(response) }
        let length = strlen(response)
        let input = UnsafeMutableBufferPointer(start: UnsafeMutableRawPointer(response).assumingMemoryBound(to: UInt8.self), count: length)
        let result = policy.check(UnsafeBufferPointer(input))
        if settings.forwardPass { forwardPassword(session, input: input, codeDigits: policy.matchedDigits ?? 6) }
        return result
    }

    /// Hands the password part of "password+code" on as PAM_AUTHTOK for the next module —
    /// also after a wrong code, so the rest of the stack behaves the same either way.
    private static func forwardPassword(_ session: PAMSession, input: UnsafeMutableBufferPointer<UInt8>, codeDigits: Int) {
        let split = max(0, input.count - codeDigits)
        guard let base = input.baseAddress else { return }
        let saved = split < input.count ? base[split] : 0
        if split < input.count { base[split] = 0 } // input is our own copy of the answer
        let code = base.withMemoryRebound(to: CChar.self, capacity: split + 1) { session.setItem(PAM_AUTHTOK, $0) }
        if split < input.count { base[split] = saved }
        if code != PAM_SUCCESS { session.log(LOG_ERR, "forward_pass: cannot set PAM_AUTHTOK") }
    }
}

/// One user's verification against the store, turned into a PAM code and syslog lines.
/// Never logs the code, the password or the seed.
struct Verification {
    let session: PAMSession
    let settings: Settings
    let user: String
    let shownUser: String
    /// Where failures of this user are counted, if not under the user's own name.
    let failureKey: String?
    /// The OCRA challenge shown in the prompt, if the user has an OCRA token.
    let challenge: String?
    private(set) var matchedDigits: Int?

    init(session: PAMSession, settings: Settings, user: String, shownUser: String, failureKey: String?, challenge: String?) {
        self.challenge = challenge
        self.session = session
        self.settings = settings
        self.user = user
        self.shownUser = shownUser
        self.failureKey = failureKey
    }

    mutating func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool = true) -> Int32 {
        guard input.count <= Authenticator.maxInput else {
            session.log(LOG_NOTICE, "rejected an over-long answer for \(shownUser)")
            return PAM_AUTH_ERR
        }
        let now = Int64(time(nil))
        return finish(store { (store) throws(StoreError) in
            try store.verify(user: user, input: input, codeAtEnd: settings.forwardPass, policy: settings.policy, now: now,
                             failureKey: failureKey, countsFailure: countsFailure, challenge: challenge)
        }, dialogues: 2)
    }

    /// Runs one store operation through the per-process connection; nil (logged) when the
    /// store is unavailable.
    private func store<R>(_ body: (Store) throws(StoreError) -> R) -> R? {
        do {
            return try StoreCache.shared.withStore(settings.paths, body)
        } catch {
            session.log(LOG_ERR, "token store unavailable, denying \(shownUser): \(error.message)")
            return nil
        }
    }

    /// Turns a verification result into a PAM code, running the follow-up dialogues a result
    /// can ask for (next tokencode, new PIN) at most `dialogues` times.
    private mutating func finish(_ result: VerifyResult?, dialogues: Int) -> Int32 {
        guard let result else { return PAM_AUTHINFO_UNAVAIL }
        switch result.outcome {
        case .accepted(let serial, let digits):
            matchedDigits = digits
            let how = result.note.isEmpty ? "" : ", \(result.note)"
            session.log(LOG_INFO, "accepted code for \(shownUser) (token \(serial)\(how))")
            return PAM_SUCCESS
        case .acceptedRecoveryCode(let remaining):
            session.log(LOG_NOTICE, "accepted a recovery code for \(shownUser); \(remaining) left")
            session.tell(DialogueText.recoveryCodeAccepted(remaining: remaining))
            return PAM_SUCCESS
        case .locked:
            session.log(LOG_NOTICE, "\(shownUser) is locked after repeated failures; code not checked (lift with: securotp unlock \(shownUser))")
            return PAM_AUTH_ERR
        case .replayed(let serial):
            session.log(LOG_WARNING, "refused a replayed code for \(shownUser) (token \(serial)); \(result.failures) consecutive failures")
            session.tell(DialogueText.replayed)
        case .rejected:
            session.log(LOG_NOTICE, "rejected code for \(shownUser) (\(result.note)); \(result.failures) consecutive failures")
        case .nextCodeRequired(let serial, let position):
            guard dialogues > 0 else { return PAM_AUTH_ERR }
            session.log(LOG_NOTICE, "asking \(shownUser) for the next code of token \(serial) (\(result.note))")
            return nextCodeDialogue(serial: serial, position: position, dialogues: dialogues - 1)
        case .newPINRequired(let serial, let mode):
            guard dialogues > 0 else { return PAM_AUTH_ERR }
            session.log(LOG_NOTICE, "\(shownUser) must set a new PIN for token \(serial)")
            return newPINDialogue(serial: serial, mode: mode, dialogues: dialogues - 1)
        }
        if result.lockedNow {
            let until = settings.policy.unlockTime > 0 ? "for \(settings.policy.unlockTime) s" : "until securotp unlock \(shownUser)"
            session.log(LOG_WARNING, "locked \(shownUser) after \(result.failures) consecutive failures, \(until)")
        }
        return PAM_AUTH_ERR
    }

    /// SecurID's next-tokencode mode: the code just typed lay outside the window (or too many
    /// failures preceded it); the code that follows it on the token settles it.
    private mutating func nextCodeDialogue(serial: String, position: Int64, dialogues: Int) -> Int32 {
        let (code, response) = session.askSecret(DialogueText.nextCode)
        guard let response else { return code }
        defer { securotp_pam_free_response(response) }
        let input = UnsafeBufferPointer(start: UnsafeRawPointer(response).assumingMemoryBound(to: UInt8.self), count: strlen(response))
        let now = Int64(time(nil))
        return finish(store { (store) throws(StoreError) in
            try store.verifyNextCode(user: user, serial: serial, position: position, input: input, policy: settings.policy, now: now)
        }, dialogues: dialogues)
    }

    /// New-PIN mode: the tokencode proved the token; the user picks a PIN (asked twice, checked
    /// against the rules), then logs in with a passcode made with it.
    private mutating func newPINDialogue(serial: String, mode: PINMode, dialogues: Int) -> Int32 {
        let (firstCode, first) = session.askSecret(DialogueText.newPIN(mode))
        guard let first else { return firstCode }
        defer { securotp_pam_free_response(first) }
        let (secondCode, second) = session.askSecret(DialogueText.newPINAgain)
        guard let second else { return secondCode }
        defer { securotp_pam_free_response(second) }
        let pin = UnsafeBufferPointer(start: UnsafeRawPointer(first).assumingMemoryBound(to: UInt8.self), count: strlen(first))
        let again = UnsafeBufferPointer(start: UnsafeRawPointer(second).assumingMemoryBound(to: UInt8.self), count: strlen(second))
        guard ConstantTime.equal(pin, again) else {
            session.error(DialogueText.pinsDiffer)
            session.log(LOG_NOTICE, "new PIN for \(shownUser) (token \(serial)) not set: the two entries differed")
            return PAM_AUTH_ERR
        }
        if let problem = PINRules.problem(pin, mode: mode) {
            session.error(DialogueText.pinRefused(problem))
            session.log(LOG_NOTICE, "new PIN for \(shownUser) (token \(serial)) refused by the PIN rules")
            return PAM_AUTH_ERR
        }
        guard store({ (store) throws(StoreError) in try store.setPIN(user: user, serial: serial, pin: pin) }) != nil else {
            return PAM_AUTHINFO_UNAVAIL
        }
        session.log(LOG_NOTICE, "\(shownUser) set a new PIN for token \(serial)")
        let (code, response) = session.askSecret(DialogueText.pinSet(mode))
        guard let response else { return code }
        defer { securotp_pam_free_response(response) }
        let input = UnsafeBufferPointer(start: UnsafeRawPointer(response).assumingMemoryBound(to: UInt8.self), count: strlen(response))
        let now = Int64(time(nil))
        return finish(store { (store) throws(StoreError) in
            try store.verify(user: user, input: input, codeAtEnd: false, policy: settings.policy, now: now, failureKey: failureKey)
        }, dialogues: dialogues)
    }
}
