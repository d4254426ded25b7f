import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// What the user must do next before a verification can conclude, whoever decided it (the
/// local store or a validator). Each case carries what the user is shown; the deciding side
/// keeps its own context (a counter position, a validator's challenge id).
enum NextStep {
    /// The token's next code: the one typed lay outside the window, or SecurID's next-tokencode mode.
    case nextCode(serial: String, prompt: String, reason: String)
    /// A new PIN, asked twice and compared here. `rules`: checked on this host before it is
    /// sent on (local mode); nil when the deciding side checks them (a validator).
    case newPIN(serial: String, prompt: String, again: String, rules: PINMode?)
    /// A passcode made with the PIN just set.
    case passcode(serial: String, prompt: String)
    /// Approve on your device (remote mode, docs/push.md): the validator holds push request
    /// `request` until `expires` (Unix seconds); the prompt shows `number`, which the user types
    /// into the device. An empty answer waits for the device, any other is a passcode.
    case deviceApproval(request: String, number: String, expires: Int64, prompt: String)
    /// The ordinary code prompt, after an approval that did not come (`reason`, for the log,
    /// says why; the prompt says it to the user).
    case code(prompt: String, reason: String)
    // Room for security keys (issue 13): "touch your key" (challenge, credentials).

    /// The step with `lead` put in front of its prompt (why the previous try was refused,
    /// when messages are silenced). Only the first prompt of a login gets one.
    func leading(_ lead: String?) -> NextStep {
        guard let lead else { return self }
        switch self {
        case .deviceApproval(let request, let number, let expires, let prompt):
            return .deviceApproval(request: request, number: number, expires: expires, prompt: "\(lead) \(prompt)")
        case .code(let prompt, let reason): return .code(prompt: "\(lead) \(prompt)", reason: reason)
        default: return self
        }
    }
}

/// A verification step's outcome, as the dialogue runner acts on it.
enum StepOutcome {
    /// Decided: log it, show its messages, end with its PAM code (PAMSession.conclude).
    case concluded(StepReport)
    /// Ask the user (`counted`: the step uses one of the login's dialogue steps), after
    /// showing `info` and `error` (a validator's words for the step).
    case next(NextStep, counted: Bool, info: String? = nil, error: String? = nil)
    /// End now with this PAM code; the reason is logged already.
    case finished(Int32)
}

/// The side that decides a login's steps: the local store (LocalVerification) or a validator
/// (RemoteVerification).
protocol DialogueBackend {
    /// For log lines: "" for the local store, " [validator]" for a validator.
    var source: String { get }
    /// The user's answer to `step`, decided.
    mutating func answer(_ step: NextStep, _ answer: UnsafeBufferPointer<UInt8>) -> StepOutcome
    /// The PAM code when a step is asked for after the login's dialogue steps are spent.
    func tooManySteps() -> Int32
}

/// Runs the dialogue after a first verification step, the same way in both modes: asks for
/// each next step (at most `steps` counted ones), hands the answer to the backend, and
/// concludes with the last outcome.
enum DialogueRunner {
    static func run<Backend: DialogueBackend>(_ first: StepOutcome, _ backend: inout Backend, login: LoginContext, steps: Int) -> Int32 {
        let session = login.session
        var outcome = first
        var stepsLeft = steps
        while true {
            switch outcome {
            case .concluded(let report):
                return session.conclude(report, user: login.shownUser)
            case .finished(let code):
                return code
            case .next(let step, let counted, let info, let error):
                if counted {
                    guard stepsLeft > 0 else { return backend.tooManySteps() }
                    stepsLeft -= 1
                }
                if let info { session.tell(info) }
                if let error { session.error(error) }
                let (code, response) = ask(step, login, source: backend.source)
                guard let response else { return code }
                defer { securotp_pam_free_response(response) }
                outcome = backend.answer(step, bytes(response))
            }
        }
    }

    /// Logs the step and asks for it. On success the caller releases the response with
    /// securotp_pam_free_response; otherwise the code to end the login with.
    static func ask(_ step: NextStep, _ login: LoginContext, source: String) -> (code: Int32, response: UnsafeMutablePointer<CChar>?) {
        let session = login.session
        let user = login.shownUser
        switch step {
        case .nextCode(let serial, let prompt, let reason):
            session.log(.nextCodeAsked, LOG_NOTICE, "asking \(user) for the next code of token \(serial) (\(reason))\(source)")
            return session.askSecret(prompt)
        case .passcode(let serial, let prompt):
            session.log(.newPINSet, LOG_NOTICE, "\(user) set a new PIN for token \(serial)\(source)")
            return session.askSecret(prompt)
        case .deviceApproval(let request, _, let expires, let prompt):
            session.log(.pushAsked, LOG_NOTICE, "asking \(user) to approve push request \(request) on a device (expires \(expires))\(source)")
            return session.askSecret(prompt)
        case .code(let prompt, let reason):
            session.log(.codeInsteadOfPush, LOG_NOTICE, "asking \(user) for a code instead (\(reason))\(source)")
            return session.askSecret(prompt)
        case .newPIN(let serial, let prompt, let again, let rules):
            session.log(.newPINRequired, LOG_NOTICE, "\(user) must set a new PIN for token \(serial)\(source)")
            let (code, pin) = session.askNewPIN(prompt, again: again, user: user, serial: serial)
            guard let pin else { return (code, nil) }
            if let rules, let problem = PINRules.problem(bytes(pin), mode: rules) {
                securotp_pam_free_response(pin)
                session.error(DialogueText.pinRefused(problem))
                session.log(.newPINRefused, LOG_NOTICE, "new PIN for \(user) (token \(serial)) refused by the PIN rules")
                return (PAM_AUTH_ERR, nil)
            }
            return (PAM_SUCCESS, pin)
        }
    }
}
