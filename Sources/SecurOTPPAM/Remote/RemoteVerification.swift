import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// Remote mode: a securotpd validator decides (`validator=`), through the /v1 host API —
/// preflight before the prompt, verify, and the answers to its challenges. The conversation
/// is the local one (PAMAuthentication.converse, the same texts), so a user cannot tell the modes
/// apart, and every decision is the store's on the validator.
///
/// When the validator cannot be asked and this host holds offline codes for the user (handed
/// out by the validator after an earlier online login), the code is checked against those,
/// each accepted once (OfflineCache). Otherwise `failmode` decides (secure:
/// PAM_AUTHINFO_UNAVAIL, safe: PAM_IGNORE). What the admin must fix — a refused credential, unsafe files — always
/// denies: those are never a reason to let a login through without its second factor.
struct RemoteVerification: PasscodeCheck {
    /// Challenge answers one login may send: a new PIN, the passcode made with it, and a next
    /// code, with room for one more (the validator bounds its dialogues itself).
    static let maxAnswers = 4

    let login: LoginContext
    private var client: ValidatorClient?
    private(set) var challenge: String?
    /// The validator's id of `challenge`, sent back with the passcode.
    private var challengeID: String?
    private(set) var matchedDigits: Int?
    /// How many trailing characters of a forward_pass answer are sent: the longest code of the
    /// user's tokens. Never more: the password stays on this host.
    private var codeLength = 6
    /// The id of the validator's challenge the user is answering.
    private var pendingChallengeID = ""
    /// The validator was unreachable before the prompt: the answer is checked against this
    /// host's offline codes only.
    private var offlineOnly = false
    /// The user's offline codes on this host (keyed with the credential the client read).
    private var offline: HostOfflineCodes?

    init(_ login: LoginContext) { self.login = login }

    private var session: PAMSession { login.session }
    private var remote: ValidatorSettings { login.settings.remote }
    var source: String { " [validator]" }

    mutating func prepare() -> Preparation {
        // A name no account can have is never sent; it is prompted and refused like others.
        guard login.validName else { return .ask }
        let client: ValidatorClient
        do {
            client = try ValidatorClient(remote)
        } catch {
            session.log(LOG_ERR, "remote mode unusable, denying \(login.shownUser): \(error.message)")
            return .finish(PAM_AUTHINFO_UNAVAIL)
        }
        self.client = client
        let offline = HostOfflineCodes(login: login, caches: OfflineCacheDirectory(login.settings), pepper: client.pepper)
        self.offline = offline
        let preflight: PreflightAnswer
        do throws(ValidatorFailure) {
            let json = try client.post("/v1/preflight", JSONWriter.object([(key: "user", value: .text(login.user))]))
            guard let answer = PreflightAnswer(json) else { throw ValidatorFailure.unavailable("unreadable preflight answer") }
            preflight = answer
        } catch {
            if case .unavailable(let reason) = error, let digits = offline.usableCodeDigits() {
                session.log(LOG_WARNING, "validator \(validatorName) unavailable during preflight (\(reason)); checking \(login.shownUser) against this host's offline codes")
                offlineOnly = true
                codeLength = digits
                return .ask
            }
            return skipOrFinish(failed(error, during: "preflight"))
        }
        if login.settings.nullok, login.known, !preflight.hasTokens {
            session.debugLog("user \(login.shownUser) has no token (validator); nullok: ignoring")
            return .finish(PAM_IGNORE)
        }
        var lengths = preflight.codeDigits
        // The validator issued (and remembers) the challenge; this host only shows it.
        if login.known, let offer = preflight.ocraChallenge {
            challenge = offer.challenge
            challengeID = offer.id
            lengths.append(offer.digits)
        }
        codeLength = lengths.filter { $0 > 0 }.max() ?? 6
        return .ask
    }

    private func skipOrFinish(_ code: Int32) -> Preparation {
        code == PAM_IGNORE ? .skipFactor : .finish(code)
    }

    mutating func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool) -> Int32 {
        guard login.validName, let client, let offline else {
            session.log(LOG_NOTICE, "rejected code for \(login.shownUser) (not sent to the validator)")
            return PAM_AUTH_ERR
        }
        if offlineOnly { return checkOffline(input, offline, countsFailure: countsFailure) }
        // forward_pass: only the trailing code leaves this host, never the password.
        let forward = login.settings.forwardPass
        let passcode = forward ? UnsafeBufferPointer(rebasing: input[max(0, input.count - codeLength)...]) : input
        var fields: [(key: String, value: JSONWriter.Field)] = [(key: "user", value: .text(login.user)), (key: "passcode", value: .secret(passcode))]
        if forward { fields.append((key: "code_at_end", value: .bool(true))) }
        if let challengeID { fields.append((key: "challenge_id", value: .text(challengeID))) }
        // Offline codes used since the last online login: the validator withdraws them first.
        let reported = offline.pendingUsage()
        if !reported.isEmpty {
            fields.append((key: "offline_used", value: .objects(reported.map { usage in
                [(key: "serial", value: .text(usage.serial)), (key: "next_unused", value: .integer(usage.nextUnused))]
            })))
        }
        // `countsFailure` is not sent: a miss with try_first_pass's password is counted too, as
        // the API has no uncounted checks (so that no host can guess without counting).
        let answer: VerifyAnswer
        do throws(ValidatorFailure) {
            answer = try ask("/v1/verify", JSONWriter.object(fields), client: client)
        } catch {
            if case .unavailable(let reason) = error, offline.usableCodeDigits() != nil {
                session.log(LOG_WARNING, "validator \(validatorName) unavailable during verification (\(reason)); checking \(login.shownUser) against this host's offline codes")
                return checkOffline(input, offline, countsFailure: countsFailure)
            }
            return failed(error, during: "verification")
        }
        offline.keep(answer, reported: reported)
        return DialogueRunner.run(outcome(answer), &self, login: login, steps: Self.maxAnswers)
    }

    /// One request whose answer is a VerifyAnswer.
    private func ask(_ path: String, _ body: SecretBytes, client: ValidatorClient) throws(ValidatorFailure) -> VerifyAnswer {
        guard let answer = VerifyAnswer(try client.post(path, body)) else { throw ValidatorFailure.unavailable("unreadable verification answer") }
        return answer
    }

    /// What a validator's answer means for the login: its decision, or the challenge it asks
    /// the user to answer (its id kept here for the answer).
    private mutating func outcome(_ answer: VerifyAnswer) -> StepOutcome {
        let serial = answer.serial ?? "?"
        switch answer.result {
        case .accept:
            matchedDigits = answer.codeDigits
            return .concluded(StepReport(answer.isRecoveryCode ? .acceptedRecoveryCode : .accepted(serial: serial), note: answer.reason,
                                         info: answer.info, error: answer.error, source: source))
        case .reject:
            return .concluded(StepReport(answer.isReplay ? .replayed : .rejected, note: answer.reason, failures: answer.failures,
                                         lockedNow: answer.lockedNow, info: answer.info, error: answer.error, source: source))
        case .locked:
            return .concluded(StepReport(.locked, note: answer.reason, failures: answer.failures, info: answer.info, error: answer.error, source: source))
        case .challenge:
            guard let challenge = answer.challenge else { return .finished(tooManySteps()) }
            pendingChallengeID = challenge.id
            let step: NextStep
            switch challenge.kind {
            case .nextCode: step = .nextCode(serial: serial, prompt: challenge.prompt, reason: answer.reason)
            case .passcode: step = .passcode(serial: serial, prompt: challenge.prompt)
            // The validator checks the PIN rules; the two entries are compared here.
            case .newPIN: step = .newPIN(serial: serial, prompt: challenge.prompt, again: challenge.confirmPrompt ?? DialogueText.newPINAgain, rules: nil)
            }
            return .next(step, counted: true, info: answer.info, error: answer.error)
        }
    }

    private mutating func checkOffline(_ input: UnsafeBufferPointer<UInt8>, _ offline: HostOfflineCodes, countsFailure: Bool) -> Int32 {
        let (code, digits) = offline.check(input, countsFailure: countsFailure)
        matchedDigits = digits
        return code
    }

    private var validatorName: String { remote.address.map { "\($0)" } ?? "validator" }

    /// A reply without a usable answer, as a PAM code and a log line an admin can act on.
    private func failed(_ failure: ValidatorFailure, during step: String) -> Int32 {
        let user = login.shownUser
        let validator = validatorName
        switch failure {
        case .unavailable(let reason):
            switch remote.failMode {
            case .secure:
                session.log(LOG_ERR, "validator \(validator) unavailable during \(step) (\(reason)); denying \(user) (failmode=secure)")
                return PAM_AUTHINFO_UNAVAIL
            case .safe:
                session.log(LOG_WARNING, "validator \(validator) unavailable during \(step) (\(reason)); failmode=safe: \(user) passes without a second factor")
                return PAM_IGNORE
            }
        case .credentialRefused(let message):
            session.log(LOG_ERR, """
                validator \(validator) refused this host's credential (\(message)); denying \(user). \
                Make a new one on the validator (securotp host add NAME --output FILE) and install it as \(remote.hostCredential ?? "host_credential") (root-owned, mode 0600)
                """)
            return PAM_AUTHINFO_UNAVAIL
        case .forbidden(let message):
            session.log(LOG_NOTICE, "validator \(validator) will not verify \(user) for this host (\(message)); denying")
            return PAM_AUTH_ERR
        case .rateLimited(let message):
            session.log(LOG_WARNING, "validator \(validator) is rate-limiting (\(message)); denying \(user)")
            return PAM_AUTH_ERR
        case .refused(let status, let message):
            session.log(LOG_ERR, "validator \(validator) refused the \(step) request for \(user) (HTTP \(status): \(message)); denying")
            return PAM_AUTH_ERR
        }
    }
}

extension RemoteVerification: DialogueBackend {
    func tooManySteps() -> Int32 {
        session.log(LOG_ERR, "the validator asked \(login.shownUser) for more dialogue steps than a login may take; denying")
        return PAM_AUTH_ERR
    }

    /// Sends the answer to the validator's challenge; entries of a new PIN that differ never
    /// get here (DialogueRunner ends the login without telling the validator, as local mode does).
    mutating func answer(_ step: NextStep, _ answer: UnsafeBufferPointer<UInt8>) -> StepOutcome {
        guard let client else { return .finished(PAM_AUTH_ERR) }
        guard answer.count <= PAMAuthentication.maxInput else {
            session.log(LOG_NOTICE, "rejected an over-long answer for \(login.shownUser)")
            return .finished(PAM_AUTH_ERR)
        }
        let body = JSONWriter.object([(key: "user", value: .text(login.user)), (key: "challenge_id", value: .text(pendingChallengeID)),
                                      (key: "answer", value: .secret(answer))])
        do throws(ValidatorFailure) {
            return outcome(try ask("/v1/verify/answer", body, client: client))
        } catch {
            return .finished(failed(error, during: "verification"))
        }
    }
}
