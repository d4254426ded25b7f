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
    /// The validator offers a push for this user and this host can check approvals: the
    /// first prompt asks for one (`offer`, once).
    private var approvals: PushApprovalCheck?
    private var pushOffered = false
    /// The push request the first prompt asked the user to approve, until it is answered.
    private var openPush: PushApprovalCheck.Request?
    /// The open push's prompt showed the offline challenge: its answer goes to `/v1/verify`
    /// with `push_id` (docs/push.md, "Offline approval").
    private var offlineOffered = false
    /// The open push's prompt as first shown, asked again after a wrong number on the device.
    private var approvalPrompt = ""
    /// Wrong numbers typed on the device that the user was told of (at most
    /// `wrongNumbersToTell`; the validator fails the request at the third).
    private var wrongNumbersTold = 0
    /// `otp` is among the user's methods before none decided (docs/configuration.md): else
    /// a passcode at the prompt is refused here, never sent.
    private var passcodesAllowed = false

    /// The user's groups, sent with the preflight: the validator applies their method policies.
    private let groups: [String]

    init(_ login: LoginContext, groups: [String] = []) {
        self.login = login
        self.groups = groups
    }

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
            session.log(.remoteUnusable, LOG_ERR, "remote mode unusable, denying \(login.shownUser): \(error.message)")
            return .finish(PAM_AUTHINFO_UNAVAIL)
        }
        self.client = client
        let offline = HostOfflineCodes(login: login, caches: OfflineCacheDirectory(login.settings), pepper: client.pepper)
        self.offline = offline
        // Never a bare 413 from the validator: a clear line here instead (fail closed, as
        // leaving a group out could only widen the user's methods).
        guard let body = Self.preflightBody(user: login.user, groups: groups) else {
            session.log(.validatorRefusedRequest, LOG_ERR, """
                the preflight for \(login.shownUser) would name \(groups.count) groups, more bytes than the validator takes \
                (\(Self.maxRequestBytes)); denying. Shorten the user's group names or groups (docs/design.md, "Login methods in remote mode")
                """)
            return .finish(PAM_AUTH_ERR)
        }
        let preflight: PreflightAnswer
        do throws(ValidatorFailure) {
            let json = try client.post(.preflight, body)
            guard let answer = PreflightAnswer(json) else { throw ValidatorFailure.unavailable("unreadable preflight answer") }
            preflight = answer
        } catch {
            // Offline codes are passcodes: not for a host whose `methods=` (or validator_may=) leaves out otp.
            if case .unavailable(let reason) = error, hostMethods?.allows(.otp) == true,
               let digits = offline.usableCodeDigits() {
                session.log(.validatorUnavailableOffline, LOG_WARNING, "validator \(validatorName) unavailable during preflight (\(reason)); checking \(login.shownUser) against this host's offline codes")
                offlineOnly = true
                passcodesAllowed = true
                codeLength = digits
                return .ask
            }
            return skipOrFinish(failed(error, during: "preflight"))
        }
        // A policy without otp (or with no method left) also ends this host's offline codes.
        if preflight.noMethods || !(preflight.methods?.allows(.otp) ?? true) { offline.discard() }
        // Holding, not using (docs/security.md): only a user who holds no factor at all is
        // skipped; a blocked device, pushes blocked or left out by a policy, a cloned key keep
        // the user a holder, prompted and refused.
        if login.settings.nullok, login.known, !preflight.holdsFactor {
            session.debugLog("user \(login.shownUser) holds no second factor (validator); nullok: ignoring")
            return .finish(PAM_IGNORE)
        }
        // The host decides what it trusts (docs/configuration.md, "Login methods"): the
        // validator's order may only narrow this host's `methods=` (and validator_may=), never
        // widen it. A security key first settles the login or hands over; push and passcodes
        // share the prompt, each only if allowed.
        var methods = hostMethods
        if let offered = preflight.methods, let host = hostMethods {
            let widened = offered.order.filter { !host.allows($0) }
            if !widened.isEmpty {
                session.log(.validatorWidensMethods, LOG_NOTICE, """
                    the validator offered \(login.shownUser) \(widened.map { $0.rawValue }.joined(separator: ",")), which this host does not allow \
                    (methods \(host.text)\(remote.validatorMay == .denyOnly ? ", validator_may=deny-only" : "")); not offered
                    """)
            }
            methods = host.bounding(offered)
        }
        var pushAllowed = false
        if preflight.noMethods {
            session.log(.validatorLeavesNoMethod, LOG_NOTICE, "the validator's policies leave \(login.shownUser) no login method; refusing")
        } else if methods == nil {
            session.log(.validatorLeavesNoMethod, LOG_NOTICE, """
                no login method of \(login.shownUser) is left: the validator's (\(preflight.methods?.text ?? "default")) and this host's \
                (methods \(login.settings.methods?.text ?? LoginMethods.standard.text), validator_may=\(remote.validatorMay.rawValue)) have none in common; refusing
                """)
        } else if let methods {
            methods: for method in methods.order {
                switch method {
                case .fido:
                    guard preflight.fido, login.known else { continue }
                    switch RemoteFido.attempt(login, client: client, validator: validatorName) {
                    case .accepted: return .finish(PAM_SUCCESS)
                    case .refused(let code): return .finish(code)
                    case .declined:
                        guard methods.explicit else { return .finish(PAM_AUTH_ERR) }
                        session.log(.fidoNextMethod, LOG_NOTICE, "FIDO: \(login.shownUser) did not touch the key; trying the next method")
                    case .unavailable:
                        // As in local mode: without a key, only a user with a code to give goes on.
                        guard preflight.hasTokens || preflight.push else {
                            session.log(.fidoOnlyKeysUnusable, LOG_NOTICE, "FIDO: \(login.shownUser) has only security keys and none can be used; denying")
                            return .finish(PAM_AUTH_ERR)
                        }
                    case .notEnrolled: break
                    }
                case .push: pushAllowed = true
                case .otp:
                    passcodesAllowed = true
                    break methods
                }
            }
        }
        var lengths = preflight.codeDigits
        // The validator issued (and remembers) the challenge; this host only shows it.
        if login.known, let offer = preflight.ocraChallenge {
            challenge = offer.challenge
            challengeID = offer.id
            lengths.append(offer.digits)
        }
        codeLength = lengths.filter { $0 > 0 }.max() ?? 6
        if preflight.push, pushAllowed { approvals = approvalChecker() }
        if login.known, preflight.holdsFactor, approvals == nil, !(passcodesAllowed && preflight.hasTokens) {
            session.log(.holderCannotUseFactor, LOG_NOTICE, """
                \(login.shownUser) holds a second factor on the validator but none can be used now \
                (\(Self.unusable(preflight, pushAllowed: pushAllowed, passcodesAllowed: passcodesAllowed))); prompting and refusing
                """)
        }
        return .ask
    }

    /// This host's methods: `methods=` (else the standard order) without what it cannot verify
    /// itself under `validator_may=deny-only`. Nil when none is left.
    private var hostMethods: LoginMethods? {
        let validatorMay = remote.validatorMay
        return (login.settings.methods ?? .standard).keeping { validatorMay.allows($0) }
    }

    /// Why a holder's factors cannot be used, as far as the preflight tells.
    private static func unusable(_ preflight: PreflightAnswer, pushAllowed: Bool, passcodesAllowed: Bool) -> String {
        var reasons: [String] = []
        if !preflight.hasTokens { reasons.append("no active token") } else if !passcodesAllowed { reasons.append("passcodes not among the methods") }
        if !preflight.push {
            reasons.append("no push: no active device, pushes blocked (deny --fraud) or push left out by a policy")
        } else if !pushAllowed {
            reasons.append("push not among the methods")
        } else {
            reasons.append("push cannot be offered on this host (device_ca unusable, forward_pass or use_first_pass)")
        }
        if preflight.fido { reasons.append("security key declined or unusable") }
        return reasons.joined(separator: "; ")
    }

    /// How this host checks approvals, when it may offer a push: like an OCRA challenge, only
    /// to a user NSS knows; not with forward_pass (its one answer carries the password) or
    /// use_first_pass (no prompt). A `device_ca=` that cannot be used is logged and no push is
    /// offered: approvals it should vouch for could not be checked, passcodes still can.
    private func approvalChecker() -> PushApprovalCheck? {
        let settings = login.settings
        guard login.known, !settings.forwardPass, !settings.useFirstPass else { return nil }
        var deviceCA: [UInt8]?
        if let path = remote.deviceCA {
            do {
                deviceCA = try PushApprovalCheck.loadDeviceCA(path)
            } catch {
                session.log(.deviceCAUnusable, LOG_ERR, "device_ca unusable, no push offered to \(login.shownUser): \(error.message)")
                return nil
            }
        }
        var revoked = DeviceRevocations()
        if let path = remote.deviceRevoked {
            do {
                revoked = try PushApprovalCheck.loadRevocations(path)
            } catch {
                session.log(.deviceRevokedUnusable, LOG_ERR, "device_revoked unusable, no push offered to \(login.shownUser): \(error.message)")
                return nil
            }
        }
        return PushApprovalCheck(deviceCA: deviceCA, requireUserVerification: remote.deviceUserVerification == .required,
                                 webOrigin: remote.webOrigin, acceptsWebApprovals: remote.acceptsWebApprovals, revoked: revoked,
                                 requireCertificateExpiry: remote.deviceCertificateExpiry == .required)
    }

    /// Opens a push request (`POST /v1/push`) and asks for its approval in the first prompt.
    /// Whatever goes wrong — the validator refuses (409: no active device, pushes blocked,
    /// too many requests) or cannot be reached — the plain code prompt follows.
    mutating func offer() -> NextStep? {
        guard approvals != nil, !pushOffered, let client else { return nil }
        pushOffered = true
        guard let challenge = PushChallenge.make() else {
            session.log(.noRandomness, LOG_ERR, "no randomness for a push request for \(login.shownUser); asking for a code")
            return nil
        }
        let context = PushContext.of(session)
        let body = JSONWriter.object([(key: "user", value: .text(login.user)), (key: "nonce", value: .text(challenge.nonce)),
                                      (key: "number", value: .text(challenge.number)), (key: "service", value: .text(context.service)),
                                      (key: "remote_address", value: .text(context.remoteAddress)), (key: "tty", value: .text(context.tty)),
                                      (key: "command", value: .text(context.command))])
        let opened: OpenedPush
        do throws(ValidatorFailure) {
            guard let answer = OpenedPush(try client.post(.push, body)) else { throw ValidatorFailure.unavailable("unreadable push answer") }
            opened = answer
        } catch {
            session.log(.pushNotOpened, error.isRefusal ? LOG_NOTICE : LOG_WARNING,
                        "validator \(validatorName) opened no push request for \(login.shownUser) (\(error.logText)); asking for a code")
            return nil
        }
        openPush = PushApprovalCheck.Request(id: opened.id, user: login.user, host: opened.host, context: context, challenge: challenge,
                                            expires: opened.expires)
        var approve = DialogueText.approveOnDevice(number: challenge.number)
        offlineOffered = false
        // An offline response is typed like a passcode: not for a user whose methods (the
        // groups' policies included, which only the preflight knew) leave out otp. Without it
        // shown, a typed answer withdraws the request before it is refused.
        if opened.offline, remote.offersOfflineApproval, passcodesAllowed, let request = openPush {
            let offlineChallenge = OfflineApproval.challenge(request.statement(device: ""))
            approve = DialogueText.approveOnDevice(number: challenge.number, offlineChallenge: OfflineApproval.grouped(offlineChallenge))
            offlineOffered = true
        }
        let prompt = (self.challenge.map { "Challenge \($0). " } ?? "") + approve
        approvalPrompt = prompt
        wrongNumbersTold = 0
        return .deviceApproval(request: opened.id, number: challenge.number, expires: opened.expires, prompt: prompt)
    }

    /// The most a host request may carry: securotpd's limit (HostRequestLimit).
    static let maxRequestBytes = HostRequestLimit.bytes

    /// The preflight's body, with the user's groups; nil when larger than the validator takes.
    static func preflightBody(user: String, groups: [String]) -> SecretBytes? {
        var fields: [(key: String, value: JSONWriter.Field)] = [(key: "user", value: .text(user))]
        if !groups.isEmpty { fields.append((key: "groups", value: .texts(groups))) }
        let body = JSONWriter.object(fields)
        return body.count <= maxRequestBytes ? body : nil
    }

    private func skipOrFinish(_ code: Int32) -> Preparation {
        code == PAM_IGNORE ? .skipFactor : .finish(code)
    }

    mutating func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool) -> Int32 {
        guard login.validName, client != nil, offline != nil else {
            session.log(.codeRejected, LOG_NOTICE, "rejected code for \(login.shownUser) (not sent to the validator)")
            return PAM_AUTH_ERR
        }
        let first: StepOutcome
        if let request = openPush {
            openPush = nil
            first = answerApproval(request, input)
        } else {
            first = verification(input, countsFailure: countsFailure)
        }
        return DialogueRunner.run(first, &self, login: login, steps: Self.maxAnswers)
    }

    /// A passcode sent to the validator (`/v1/verify`), or checked against this host's offline
    /// codes when the validator cannot be asked.
    private mutating func verification(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool, pushID: String? = nil) -> StepOutcome {
        guard let client, let offline else { return .finished(PAM_AUTH_ERR) }
        guard passcodesAllowed else {
            if remote.validatorMay == .denyOnly {
                session.log(.notVerifiedByHost, LOG_NOTICE, "rejected a passcode for \(login.shownUser), not sent: validator_may=deny-only takes only device approvals")
            } else {
                session.log(.passcodeNotAllowed, LOG_NOTICE, "rejected a passcode for \(login.shownUser): otp is not among the user's login methods")
            }
            return .finished(PAM_AUTH_ERR)
        }
        if offlineOnly { return .finished(checkOffline(input, offline, countsFailure: countsFailure)) }
        // forward_pass: only the trailing code leaves this host, never the password.
        let forward = login.settings.forwardPass
        let passcode = forward ? UnsafeBufferPointer(rebasing: input[max(0, input.count - codeLength)...]) : input
        var fields: [(key: String, value: JSONWriter.Field)] = [(key: "user", value: .text(login.user)), (key: "passcode", value: .secret(passcode))]
        if forward { fields.append((key: "code_at_end", value: .bool(true))) }
        if let challengeID { fields.append((key: "challenge_id", value: .text(challengeID))) }
        if let pushID { fields.append((key: "push_id", value: .text(pushID))) }
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
            answer = try ask(.verify, JSONWriter.object(fields), client: client)
        } catch {
            if case .unavailable(let reason) = error, offline.usableCodeDigits() != nil {
                session.log(.validatorUnavailableOffline, LOG_WARNING, "validator \(validatorName) unavailable during verification (\(reason)); checking \(login.shownUser) against this host's offline codes")
                return .finished(checkOffline(input, offline, countsFailure: countsFailure))
            }
            return .finished(failed(error, during: "verification"))
        }
        offline.keep(answer, reported: reported)
        return outcome(answer)
    }

    // MARK: push approval (docs/push.md)

    /// The answer to the approval prompt: empty — the user approved (or is about to) on the
    /// device, so wait for it; anything else is a passcode, and the request is withdrawn.
    private mutating func answerApproval(_ request: PushApprovalCheck.Request, _ input: UnsafeBufferPointer<UInt8>) -> StepOutcome {
        guard input.isEmpty else {
            // With the offline challenge shown, one call: the validator takes the answer as the
            // offline response, or cancels the request and verifies it as a passcode.
            if offlineOffered { return verification(input, countsFailure: true, pushID: request.id) }
            report(.pushCancel, [(key: "id", value: .text(request.id))], request)
            return verification(input, countsFailure: true)
        }
        return awaitApproval(request)
    }

    /// Long-polls `/v1/push/wait` (each call at most 25 s, its own HTTP bound the wait plus
    /// `timeout=`) until the request leaves `pending`, or `push_timeout=` has passed, or the
    /// request's expiry; then checks the approval here. Everything but a verified approval
    /// leads to the plain code prompt: a passcode is always possible, and a login waits at
    /// most `push_timeout` plus `timeout` seconds.
    private mutating func awaitApproval(_ request: PushApprovalCheck.Request) -> StepOutcome {
        guard let client, let approvals else { return .finished(PAM_AUTH_ERR) }
        let deadline = Self.monotonicMilliseconds() + Int64(remote.pushTimeout) * 1000
        while true {
            let left = deadline - Self.monotonicMilliseconds()
            guard left >= 1000 else {
                report(.pushCancel, [(key: "id", value: .text(request.id))], request)
                return passcodeInstead(DialogueText.approvalExpired, "no approval within push_timeout=\(remote.pushTimeout) s", request)
            }
            // Past the expiry the validator answers `expired` at once; one call still asks.
            let untilExpiry = max(1, request.expires - Int64(time(nil)) + 1)
            let wait = Int(min(Self.longestWait, left / 1000, untilExpiry))
            let answer: PushWaitAnswer
            // The wrong numbers told so far: the validator answers as soon as another is typed.
            // Past `wrongNumbersToTell` none is sent, so no validator can make this loop spin.
            var fields: [(key: String, value: JSONWriter.Field)] = [(key: "id", value: .text(request.id)), (key: "wait", value: .integer(Int64(wait)))]
            if wrongNumbersTold < Self.wrongNumbersToTell { fields.append((key: "wrong_numbers", value: .integer(Int64(wrongNumbersTold)))) }
            do throws(ValidatorFailure) {
                let json = try client.post(.pushWait, JSONWriter.object(fields), seconds: wait + remote.timeout)
                guard let parsed = PushWaitAnswer(json, id: request.id) else { throw ValidatorFailure.unavailable("unreadable push state") }
                answer = parsed
            } catch {
                return passcodeInstead(DialogueText.approvalUnavailable, "waiting failed: \(error.logText)", request)
            }
            if let approval = answer.approval { return concludeApproval(approval, request, approvals) }
            switch answer.state {
            case .pending:
                guard answer.wrongNumbers > wrongNumbersTold, wrongNumbersTold < Self.wrongNumbersToTell else { continue }
                // Told at once, and the same request asked again: the device takes the number again.
                wrongNumbersTold = min(answer.wrongNumbers, Self.wrongNumbersToTell)
                session.log(.pushWrongNumber, LOG_NOTICE, "the validator reports a wrong number typed on the device for push request \(request.id) of \(login.shownUser) (\(answer.wrongNumbers) so far); asking again\(source)")
                openPush = request
                return .next(.deviceApproval(request: request.id, number: request.challenge.number, expires: request.expires,
                                             prompt: "\(DialogueText.approvalFailed) \(approvalPrompt)"), counted: false)
            case .approved: return .finished(PAM_AUTH_ERR) // never without an approval (PushWaitAnswer)
            case .denied: return passcodeInstead(DialogueText.approvalDenied, "denied on the device", request)
            case .expired: return passcodeInstead(DialogueText.approvalExpired, "the request expired", request)
            case .failed where answer.failedByWrongNumbers:
                return passcodeInstead(DialogueText.approvalFailed, "failed: wrong numbers typed on the device", request)
            case .failed:
                // A signature the validator refused (another number's, a replayed one) or a device
                // gone: a refused approval, not a wrong number (docs/push.md, "What the user sees").
                return passcodeInstead(DialogueText.approvalRefused, "failed: the validator refused the device's answer", request)
            case .cancelled: return passcodeInstead(DialogueText.approvalExpired, "cancelled on the validator", request)
            case .consumed:
                session.log(.approvalConsumed, LOG_WARNING, "push request \(request.id) for \(login.shownUser): its approval was already handed out (consumed); refusing it\(source)")
                return passcodeInstead(DialogueText.approvalRefused, "approval already consumed", request)
            }
        }
    }

    /// The longest single `/v1/push/wait` (the validator allows 30).
    static let longestWait: Int64 = 25
    /// Wrong numbers on the device a login tells of and asks again after: the validator fails
    /// a request at the third (docs/push.md), which the `failed` answer tells.
    static let wrongNumbersToTell = 2

    /// This host's check of the approval, reported to the validator either way.
    private mutating func concludeApproval(_ approval: DeviceApproval, _ request: PushApprovalCheck.Request,
                                           _ approvals: PushApprovalCheck) -> StepOutcome {
        switch approvals.check(approval, for: request) {
        case .accepted(let userVerified):
            if approvals.certificateWithoutExpiry(approval) {
                session.log(.certificateWithoutExpiry, LOG_WARNING, "accepted the approval of \(login.shownUser) from device \(approval.device) on a certificate without an expiry; certify it again (securotp device certify \(login.shownUser) \(approval.device) --ca-key FILE), or set device_cert_expiry=required to refuse such certificates")
            }
            report(.pushResult, [(key: "id", value: .text(request.id)), (key: "accepted", value: .bool(true)), (key: "reason", value: .text("accepted"))], request)
            return .concluded(StepReport(.approvedOnDevice(device: approval.device, request: request.id, userVerified: userVerified), note: "", source: source))
        case .refused(let reason):
            session.log(.approvalRefused, LOG_WARNING, "refused the approval of \(login.shownUser) from device \(approval.device) (push request \(request.id)): \(reason)\(source)")
            report(.pushResult, [(key: "id", value: .text(request.id)), (key: "accepted", value: .bool(false)), (key: "reason", value: .text(reason))], request)
            return passcodeInstead(DialogueText.approvalRefused, "approval refused: \(reason)", request)
        }
    }

    /// The plain code prompt after an approval that did not come, `shown` in front of it.
    private func passcodeInstead(_ shown: String, _ reason: String, _ request: PushApprovalCheck.Request) -> StepOutcome {
        let prompt = PAMAuthentication.prompt(login.settings, challenge: challenge)
        return .next(.code(prompt: "\(shown) \(prompt)", reason: "push request \(request.id): \(reason)"), counted: false)
    }

    /// A report the validator acts on but the login does not wait for the meaning of
    /// (`/v1/push/cancel`, `/v1/push/result`): a failure is logged, the login goes on.
    private func report(_ path: APIPath, _ fields: [(key: String, value: JSONWriter.Field)], _ request: PushApprovalCheck.Request) {
        guard let client else { return }
        do throws(ValidatorFailure) {
            _ = try client.post(path, JSONWriter.object(fields))
        } catch {
            session.log(.validatorDidNotTake, LOG_WARNING, "validator \(validatorName) did not take \(path.template) for push request \(request.id) (\(error.logText))")
        }
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// One request whose answer is a VerifyAnswer.
    private func ask(_ path: APIPath, _ body: SecretBytes, client: ValidatorClient) throws(ValidatorFailure) -> VerifyAnswer {
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
                session.log(.validatorUnavailableDenied, LOG_ERR, "validator \(validator) unavailable during \(step) (\(reason)); denying \(user) (failmode=secure)")
                return PAM_AUTHINFO_UNAVAIL
            case .safe:
                session.log(.validatorUnavailableFailSafe, LOG_WARNING, "validator \(validator) unavailable during \(step) (\(reason)); failmode=safe: \(user) passes without a second factor")
                return PAM_IGNORE
            }
        case .credentialRefused(let message):
            session.log(.hostCredentialRefused, LOG_ERR, """
                validator \(validator) refused this host's credential (\(message)); denying \(user). \
                Make a new one on the validator (securotp host add NAME --output FILE) and install it as \(remote.hostCredential ?? "host_credential") (root-owned, mode 0600)
                """)
            return PAM_AUTHINFO_UNAVAIL
        case .forbidden(let message):
            session.log(.validatorForbidsUser, LOG_NOTICE, "validator \(validator) will not verify \(user) for this host (\(message)); denying")
            return PAM_AUTH_ERR
        case .rateLimited(let message):
            session.log(.validatorRateLimiting, LOG_WARNING, "validator \(validator) is rate-limiting (\(message)); denying \(user)")
            return PAM_AUTH_ERR
        case .refused(let status, let message):
            session.log(.validatorRefusedRequest, LOG_ERR, "validator \(validator) refused the \(step) request for \(user) (HTTP \(status): \(message)); denying")
            return PAM_AUTH_ERR
        }
    }
}

extension RemoteVerification: DialogueBackend {
    func tooManySteps() -> Int32 {
        session.log(.tooManySteps, LOG_ERR, "the validator asked \(login.shownUser) for more dialogue steps than a login may take; denying")
        return PAM_AUTH_ERR
    }

    /// Sends the answer to the validator's challenge; entries of a new PIN that differ never
    /// get here (DialogueRunner ends the login without telling the validator, as local mode does).
    mutating func answer(_ step: NextStep, _ answer: UnsafeBufferPointer<UInt8>) -> StepOutcome {
        guard let client else { return .finished(PAM_AUTH_ERR) }
        guard answer.count <= PAMAuthentication.maxInput else {
            session.log(.overlongAnswer, LOG_NOTICE, "rejected an over-long answer for \(login.shownUser)")
            return .finished(PAM_AUTH_ERR)
        }
        switch step {
        case .code: return verification(answer, countsFailure: true)
        case .deviceApproval(let request, _, _, _):
            guard let open = openPush, open.id == request else { return .finished(PAM_AUTH_ERR) }
            openPush = nil
            return answerApproval(open, answer)
        case .nextCode, .newPIN, .passcode: break
        }
        let body = JSONWriter.object([(key: "user", value: .text(login.user)), (key: "challenge_id", value: .text(pendingChallengeID)),
                                      (key: "answer", value: .secret(answer))])
        do throws(ValidatorFailure) {
            return outcome(try ask(.verifyAnswer, body, client: client))
        } catch {
            return .finished(failed(error, during: "verification"))
        }
    }
}
