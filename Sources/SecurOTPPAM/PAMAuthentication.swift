import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// pam_sm_authenticate for pam_securotp.so. Deny by default: every path that is not an
/// accepted code ends in a failure code and a syslog line; the only ways out without a code
/// are the opt-in PAM_IGNORE of `nullok`, `groups=` and `failmode=safe`, which never grant
/// access by themselves.
public enum PAMAuthentication {
    static let forwardPassPrompt = "Password & verification code: "
    /// Codes are 6–8 digits; forward_pass adds a password. Anything longer is not a passcode.
    static let maxInput = 1024

    public static func authenticate(handle: OpaquePointer, flags: Int32, arguments: [String]) -> Int32 {
        let settings: Settings
        do {
            settings = try Settings.fromModuleArguments(arguments)
        } catch {
            PAMSession.log(handle, .configurationError, LOG_ERR, "configuration error: \(error.message)")
            return PAM_SERVICE_ERR
        }
        let session = PAMSession(handle: handle, silent: flags & Int32(bitPattern: UInt32(PAM_SILENT)) != 0, debug: settings.debug)

        let (userCode, userName) = session.user()
        guard let user = userName else {
            session.log(.userUnknown, LOG_ERR, "cannot determine the user name: \(String(cString: pam_strerror(handle, userCode)))")
            return userCode == PAM_CONV_AGAIN ? PAM_INCOMPLETE : userCode
        }
        let validName = (try? Store.validate(user: user)) != nil
        // Tokens, failures and locks live under NSS's spelling of the name. A name NSS does not
        // know (or cannot answer for right now) is never let through by nullok or groups=; it
        // is prompted and refused like everyone else, its failures counted on one decoy row.
        let account = validName ? UnixAccount.resolve(user) : nil
        let login = LoginContext(session: session, settings: settings, user: account?.name ?? user,
                                 shownUser: validName ? user : "(invalid user name)", known: account != nil, validName: validName)

        // Group names cost NSS lookups: resolved for groups= here, else only if a policy asks.
        let groups = settings.groups.isEmpty ? nil : account?.groupNames()
        if !settings.groups.isEmpty, let groups, !settings.groups.covers(groups: groups) {
            session.debugLog("user \(login.shownUser) is outside groups=; not asking for a code")
            return PAM_IGNORE
        }

        if settings.remote.isEnabled {
            // The validator narrows the user's methods by the policies of these groups
            // (docs/configuration.md, "Login methods"); only NSS's users have any.
            var policyGroups: [String] = []
            if login.known {
                // Groups only narrow: a user whose groups cannot be read would lose their
                // policies, so the login fails closed instead.
                guard let names = groups ?? account?.groupNames() else {
                    session.log(.groupsUnreadable, LOG_ERR, "cannot read the groups of \(login.shownUser) through NSS; denying")
                    return PAM_AUTHINFO_UNAVAIL
                }
                policyGroups = names
            }
            var check = RemoteVerification(login, groups: policyGroups)
            return converse(&check, login)
        }
        // Holding, not using: nullok skips only a user who holds no factor from any source,
        // decided before any order or policy narrows what may be used (FactorHolding).
        if settings.nullok, login.known, !FactorHolding.local(login) {
            session.debugLog("user \(login.shownUser) holds no second factor; nullok: ignoring")
            return PAM_IGNORE
        }
        // The user's methods in order (docs/configuration.md, "Login methods"): the user's
        // policy, the groups', `methods=`, else FIDO then passcodes. Names NSS does not know
        // get the global order, like everyone without a policy.
        let methods: LoginMethods?
        var groupsUnreadable = false
        do {
            methods = try StoreCache.shared.withStore(settings.paths) { (store) throws(StoreError) in
                try store.loginMethods(user: login.known ? login.user : "", groups: { () throws(StoreError) -> [String] in
                    // As in remote mode: groups only narrow, so a user whose groups cannot be
                    // read would lose their policies; the login fails closed instead.
                    guard let account else { return [] }
                    guard let names = groups ?? account.groupNames() else {
                        groupsUnreadable = true
                        throw StoreError(.system, "cannot read the groups of \(login.shownUser) through NSS")
                    }
                    return names
                }, global: settings.methods)
            }
        } catch {
            // An unavailable store is reported by the passcode step as before; a policy (or the
            // groups it depends on) that cannot be read fails closed: prompted and refused.
            if groupsUnreadable {
                session.log(.groupsUnreadable, LOG_ERR, "\(error.message); refusing")
            } else {
                session.log(.methodsUnreadable, LOG_ERR, "cannot read the login methods of \(login.shownUser), refusing: \(error.message)")
            }
            var check = LocalVerification(login, codes: .refused)
            return converse(&check, login)
        }
        return local(login, methods)
    }

    /// Local mode: each of the user's methods in order until one decides. Push is a validator's
    /// (remote mode); here it is skipped. A user whose methods are all spent or unusable is
    /// prompted and refused like a user without a token (`nullok` has already skipped only
    /// users who hold nothing).
    private static func local(_ login: LoginContext, _ methods: LoginMethods?) -> Int32 {
        for method in methods?.order ?? [] {
            switch method {
            case .fido:
                // A touch may settle the login (Fido/FidoLogin.swift).
                switch FidoLogin.attempt(login) {
                case .accepted: return PAM_SUCCESS
                case .refused(let code): return code
                case .declined:
                    guard methods?.explicit == true else { return PAM_AUTH_ERR }
                    login.session.log(.fidoNextMethod, LOG_NOTICE, "FIDO: \(login.shownUser) did not touch the key; trying the next method")
                case .unavailable, .notEnrolled: break
                }
            case .push:
                continue
            case .otp:
                var check = LocalVerification(login)
                return converse(&check, login)
            }
        }
        if login.known {
            login.session.log(.holderCannotUseFactor, LOG_NOTICE, """
                no login method of \(login.shownUser) can be used now (methods \(methods?.text ?? "none in common"): \
                a key absent, not touched or cloned, or a factor the methods leave out); prompting and refusing
                """)
        }
        var check = LocalVerification(login, codes: .refused)
        return converse(&check, login)
    }

    /// The conversation around a check, the same in both modes: the check prepares (before
    /// any prompt), an earlier module's password may be the code, then the prompt.
    static func converse<Check: PasscodeCheck>(_ check: inout Check, _ login: LoginContext) -> Int32 {
        let session = login.session
        let settings = login.settings
        var memory = HandleMemory.load(session, user: login.user)
        switch check.prepare() {
        case .ask: break
        case .finish(let code):
            // Before any prompt: only an unavailable store or validator has a reason to tell.
            if code == PAM_AUTHINFO_UNAVAIL { Refusal.tell(after: code, login, &memory) }
            return code
        case .skipFactor:
            // The password still has to reach the next module; the code part is dropped.
            guard settings.forwardPass else { return PAM_IGNORE }
            let (code, response) = session.askSecret(prompt(settings, challenge: nil))
            guard let response else { return code }
            defer { securotp_pam_free_response(response) }
            forwardPassword(session, input: mutableBytes(response), codeDigits: 6)
            return PAM_IGNORE
        }

        if settings.useFirstPass || settings.tryFirstPass, let previous = session.item(PAM_AUTHTOK) {
            let input = UnsafeBufferPointer(start: UnsafeRawPointer(previous).assumingMemoryBound(to: UInt8.self), count: strlen(previous))
            // try_first_pass usually hands over a password, not a code: a miss there is not a
            // failure of the user's, and the prompt that follows gets the real attempt.
            let result = verify(&check, input, login, countsFailure: settings.useFirstPass)
            if result == PAM_SUCCESS || settings.useFirstPass || result == PAM_AUTHINFO_UNAVAIL || result == PAM_IGNORE {
                Refusal.tell(after: result, login, &memory)
                return result
            }
        } else if settings.useFirstPass {
            session.log(.noEarlierPassword, LOG_NOTICE, "use_first_pass: no earlier password for \(login.shownUser); denying")
            return PAM_AUTH_ERR
        }

        // With messages silenced, the previous call's refusal on this handle (sudo's earlier
        // try) is told before the prompt, the only text that still reaches the user.
        let reason = memory.takePending()
        let shown = prompt(settings, challenge: check.challenge)
        let (conversationCode, response) = if let offered = check.offer() {
            DialogueRunner.ask(offered.leading(reason), login, source: check.source)
        } else {
            session.askSecret(reason.map { "\($0) \(shown)" } ?? shown)
        }
        guard let response else {
            session.log(.conversationFailed, LOG_ERR, "conversation failed for \(login.shownUser): \(String(cString: pam_strerror(session.handle, conversationCode)))")
            return conversationCode
        }
        defer { securotp_pam_free_response(response) }
        let input = mutableBytes(response)
        let result = verify(&check, UnsafeBufferPointer(input), login, countsFailure: true)
        if settings.forwardPass { forwardPassword(session, input: input, codeDigits: check.matchedDigits ?? 6) }
        Refusal.tell(after: result, login, &memory)
        return result
    }

    private static func verify<Check: PasscodeCheck>(_ check: inout Check, _ input: UnsafeBufferPointer<UInt8>, _ login: LoginContext,
                                                     countsFailure: Bool) -> Int32 {
        login.session.record.reset()
        guard input.count <= maxInput else {
            login.session.log(.overlongAnswer, LOG_NOTICE, "rejected an over-long answer for \(login.shownUser)")
            return PAM_AUTH_ERR
        }
        return check.check(input, countsFailure: countsFailure)
    }

    /// The plain code prompt: `prompt=`, after an OCRA challenge when there is one.
    static func prompt(_ settings: Settings, challenge: String?) -> String {
        let prompt = settings.forwardPass && settings.prompt == Settings().prompt ? forwardPassPrompt : settings.prompt
        return challenge.map { "Challenge \($0). " + prompt } ?? prompt
    }

    private static func mutableBytes(_ response: UnsafeMutablePointer<CChar>) -> UnsafeMutableBufferPointer<UInt8> {
        UnsafeMutableBufferPointer(start: UnsafeMutableRawPointer(response).assumingMemoryBound(to: UInt8.self), count: strlen(response))
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
        if code != PAM_SUCCESS { session.log(.forwardPassFailed, LOG_ERR, "forward_pass: cannot set PAM_AUTHTOK") }
    }
}
