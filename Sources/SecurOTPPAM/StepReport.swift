import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// What one verification step decided — by the local store or by a validator — in the terms
/// the log and the user see. `conclude` turns it into syslog lines, messages and a PAM code in
/// one place, so both modes log and answer alike. Never holds a code, PIN or password.
struct StepReport {
    enum Outcome {
        case accepted(serial: String)
        case acceptedRecoveryCode
        /// An approval on the user's device whose signature this host verified.
        case approvedOnDevice(device: String, request: String, userVerified: Bool)
        case locked
        case replayed
        case rejected
    }

    var outcome: Outcome
    /// Why, for the log: "wrong code", "token 123 expired", "2 left", "drift +1".
    var note: String
    var failures: Int
    var lockedNow: Bool
    /// How long the lock this step caused lasts, when known (local mode knows its policy).
    var lockDuration: String?
    /// For the user's screen: PAM_TEXT_INFO and PAM_ERROR_MSG (PAM_SILENT silences both).
    var info: String?
    var error: String?
    /// Who decided, for the log: empty for the local store, " [validator]" for a validator.
    var source: String

    init(_ outcome: Outcome, note: String, failures: Int = 0, lockedNow: Bool = false, lockDuration: String? = nil,
         info: String? = nil, error: String? = nil, source: String = "") {
        self.outcome = outcome
        self.note = note
        self.failures = failures
        self.lockedNow = lockedNow
        self.lockDuration = lockDuration
        self.info = info
        self.error = error
        self.source = source
    }
}

extension PAMSession {
    /// Logs the step, shows its messages and returns PAM_SUCCESS for an accepted code,
    /// PAM_AUTH_ERR for everything else.
    func conclude(_ report: StepReport, user: String) -> Int32 {
        let note = report.note.isEmpty ? "" : " (\(report.note))"
        let count = Wording.count(report.failures, "consecutive failure")
        let failures = "\(count)\(report.source)"
        var result = PAM_AUTH_ERR
        switch report.outcome {
        case .accepted, .acceptedRecoveryCode, .approvedOnDevice: record.kind = nil
        case .locked: record.kind = .locked
        case .replayed: record.kind = .replayed
        case .rejected: record.kind = .refused
        }
        if case .locked = report.outcome { record.locks = true }
        if report.lockedNow { record.locks = true }
        switch report.outcome {
        case .accepted(let serial):
            let how = report.note.isEmpty ? "" : ", \(report.note)"
            log(.codeAccepted, LOG_INFO, "accepted code for \(user) (token \(serial)\(how))\(report.source)")
            result = PAM_SUCCESS
        case .acceptedRecoveryCode:
            log(.recoveryCodeAccepted, LOG_NOTICE, "accepted a recovery code for \(user)\(note)\(report.source)")
            result = PAM_SUCCESS
        case .approvedOnDevice(let device, let request, let userVerified):
            let verified = userVerified ? "user verified on the device" : "user not verified on the device"
            log(.pushApproved, LOG_INFO, "accepted the approval of \(user) on device \(device) (push request \(request), signature checked here, \(verified))\(report.source)")
            result = PAM_SUCCESS
        case .locked:
            let lift = report.source.isEmpty ? "securotp unlock \(user)" : "securotp unlock \(user) on the validator"
            log(.userLocked, LOG_NOTICE, "\(user) is locked after repeated failures; code not checked (lift with: \(lift))\(report.source)")
        case .replayed:
            // The engine's note says "replayed code (token N)" already: keep what it adds.
            let prefix = "replayed code "
            let detail = report.note.hasPrefix(prefix) ? " " + String(report.note.dropFirst(prefix.count)) : note
            log(.replayRefused, LOG_WARNING, "refused a replayed code for \(user)\(detail); \(failures)")
        case .rejected:
            log(.codeRejected, LOG_NOTICE, "rejected code for \(user)\(note); \(failures)")
        }
        if let info = report.info { tell(info) }
        if let error = report.error { self.error(error) }
        if report.lockedNow {
            let until = report.lockDuration.map { ", \($0)" } ?? ""
            log(.lockedNow, LOG_WARNING, "locked \(user) after \(count)\(until)\(report.source)")
        }
        return result
    }

    /// The new-PIN dialogue's two entries. Returns the PIN (the caller releases it with
    /// securotp_pam_free_response) or, with a nil PIN, the code to end the login with: the
    /// conversation's failure, or PAM_AUTH_ERR when the entries differ (shown and logged; the
    /// token stays in new-PIN mode).
    func askNewPIN(_ prompt: String, again: String, user: String, serial: String) -> (code: Int32, pin: UnsafeMutablePointer<CChar>?) {
        let (firstCode, first) = askSecret(prompt)
        guard let first else { return (firstCode, nil) }
        let (secondCode, second) = askSecret(again)
        guard let second else {
            securotp_pam_free_response(first)
            return (secondCode, nil)
        }
        defer { securotp_pam_free_response(second) }
        guard ConstantTime.equal(bytes(first), bytes(second)) else {
            securotp_pam_free_response(first)
            error(DialogueText.pinsDiffer)
            log(.newPINMismatch, LOG_NOTICE, "new PIN for \(user) (token \(serial)) not set: the two entries differed")
            return (PAM_AUTH_ERR, nil)
        }
        return (PAM_SUCCESS, first)
    }
}

/// A conversation answer's bytes (without the terminating NUL).
func bytes(_ response: UnsafeMutablePointer<CChar>) -> UnsafeBufferPointer<UInt8> {
    UnsafeBufferPointer(start: UnsafeRawPointer(response).assumingMemoryBound(to: UInt8.self), count: strlen(response))
}
