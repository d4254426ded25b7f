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
    /// The dialogue under way: the next code's position, the new PIN's mode.
    private var nextCodePosition: Int64 = 0
    private var pinMode = PINMode.none

    /// Whether codes can log this user in. `refused`: no method that takes codes is left
    /// (LoginMethods); the prompt and refusal are those of a user without a token. `nullok`
    /// is not asked here: it skipped only users who hold nothing (FactorHolding), before this.
    enum CodeUse: Equatable {
        case accepted
        case refused
    }
    let codes: CodeUse

    init(_ login: LoginContext, codes: CodeUse = .accepted) {
        self.login = login
        self.codes = codes
    }

    private var session: PAMSession { login.session }
    private var settings: Settings { login.settings }

    /// Where failures of this user are counted, if not under the user's own name: names NSS
    /// does not know share one decoy row.
    private var failureKey: String? { login.known ? nil : Store.unresolvedUsersKey }

    mutating func prepare() -> Preparation {
        do {
            let now = Int64(time(nil))
            let issue = try StoreCache.shared.withStore(settings.paths) { (store) throws(StoreError) -> ChallengeIssue? in
                if codes == .refused {
                    // The same store read as for a user without a token, no challenge.
                    _ = try store.hasActiveTokens(user: login.user)
                    return nil
                }
                // A user with an OCRA token gets a fresh challenge in its suite's format, this
                // attempt counted before it is shown.
                return login.known ? try store.issueChallenge(user: login.user, policy: settings.policy, now: now) : nil
            }
            switch issue {
            case .issued(_, let suite)?, .locked(let suite)?:
                guard let text = suite.randomChallenge() else {
                    session.log(.noRandomness, LOG_ERR, "no randomness for an OCRA challenge; denying \(login.shownUser)")
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
            session.log(.storeUnavailable, LOG_ERR, "token store unavailable, denying \(login.shownUser): \(error.message)")
            return .finish(PAM_AUTHINFO_UNAVAIL)
        }
    }

    mutating func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool) -> Int32 {
        let now = Int64(time(nil))
        // A challenge answered too late is not checked; its attempt stays counted.
        let live = now - issuedAt <= ChallengeIssue.lifetime ? challenge : nil
        if challenge != nil, live == nil {
            session.log(.challengeExpired, LOG_NOTICE, "OCRA challenge for \(login.shownUser) answered after more than \(ChallengeIssue.lifetime) s; not checked")
        }
        // Codes refused: checked against the decoy row's (empty) tokens, the failure counted
        // on the user's own row, like a wrong code of a user without a token.
        let tokensOf = codes == .accepted ? login.user : Store.unresolvedUsersKey
        let failureKey = codes == .accepted ? self.failureKey : (self.failureKey ?? login.user)
        let first = outcome(store { (store) throws(StoreError) in
            try store.verify(user: tokensOf, input: input, codeAtEnd: settings.forwardPass, policy: settings.policy, now: now,
                             failureKey: failureKey, countsFailure: countsFailure, challenge: live, charged: charged)
        })
        return DialogueRunner.run(first, &self, login: login, steps: Self.dialogueSteps)
    }

    /// Follow-up dialogues (next tokencode, new PIN) one login may run.
    static let dialogueSteps = 2

    /// Runs one store operation; nil (logged) when the store is unavailable.
    private func store<R>(_ body: (Store) throws(StoreError) -> R) -> R? {
        do {
            return try StoreCache.shared.withStore(settings.paths, body)
        } catch {
            session.log(.storeUnavailable, LOG_ERR, "token store unavailable, denying \(login.shownUser): \(error.message)")
            return nil
        }
    }

    /// What a verification result means for the login: a decision, or the dialogue it asks
    /// for (the position or PIN mode kept here for the answer).
    private mutating func outcome(_ result: VerifyResult?) -> StepOutcome {
        guard let result else { return .finished(PAM_AUTHINFO_UNAVAIL) }
        switch result.outcome {
        case .accepted(let serial, let digits):
            matchedDigits = digits
            return .concluded(StepReport(.accepted(serial: serial), note: result.note))
        case .acceptedRecoveryCode(let remaining):
            return .concluded(StepReport(.acceptedRecoveryCode, note: "\(remaining) left", info: DialogueText.recoveryCodeAccepted(remaining: remaining)))
        case .locked:
            return .concluded(StepReport(.locked, note: "", failures: result.failures))
        case .replayed(let serial):
            return .concluded(StepReport(.replayed, note: "token \(serial)", failures: result.failures, lockedNow: result.lockedNow,
                                         lockDuration: lockDuration, info: DialogueText.replayed))
        case .rejected:
            return .concluded(StepReport(.rejected, note: result.note, failures: result.failures, lockedNow: result.lockedNow,
                                         lockDuration: lockDuration))
        case .nextCodeRequired(let serial, let position):
            // SecurID's next-tokencode mode: the code just typed lay outside the window (or
            // too many failures preceded it); the code that follows it on the token settles it.
            nextCodePosition = position
            return .next(.nextCode(serial: serial, prompt: DialogueText.nextCode, reason: result.note), counted: true)
        case .newPINRequired(let serial, let mode):
            // New-PIN mode: the tokencode proved the token; the user picks a PIN (checked
            // against the rules here), then logs in with a passcode made with it.
            pinMode = mode
            return .next(.newPIN(serial: serial, prompt: DialogueText.newPIN(mode), again: DialogueText.newPINAgain, rules: mode), counted: true)
        }
    }

    private var lockDuration: String {
        settings.policy.unlockTime > 0 ? "for \(settings.policy.unlockTime) s" : "until securotp unlock \(login.shownUser)"
    }
}

extension LocalVerification: DialogueBackend {
    var source: String { "" }

    func tooManySteps() -> Int32 { PAM_AUTH_ERR }

    mutating func answer(_ step: NextStep, _ answer: UnsafeBufferPointer<UInt8>) -> StepOutcome {
        let now = Int64(time(nil))
        switch step {
        case .nextCode(let serial, _, _):
            let position = nextCodePosition
            return outcome(store { (store) throws(StoreError) in
                try store.verifyNextCode(user: login.user, serial: serial, position: position, input: answer, policy: settings.policy, now: now)
            })
        case .newPIN(let serial, _, _, _):
            guard store({ (store) throws(StoreError) in try store.setPIN(user: login.user, serial: serial, pin: answer) }) != nil else {
                return .finished(PAM_AUTHINFO_UNAVAIL)
            }
            // Setting the PIN is part of this step: the passcode made with it is not another.
            return .next(.passcode(serial: serial, prompt: DialogueText.pinSet(pinMode)), counted: false)
        case .passcode, .code:
            return outcome(store { (store) throws(StoreError) in
                try store.verify(user: login.user, input: answer, codeAtEnd: false, policy: settings.policy, now: now, failureKey: failureKey)
            })
        case .deviceApproval:
            // The local store holds no devices: never offered in local mode.
            return .finished(PAM_AUTH_ERR)
        }
    }
}
