import SecurOTPCore
import SecurOTPStore

/// Turns the store's verification results into API answers, the same way for every backend,
/// and mirrors the PAM module's local dialogues: a result that needs another step (next
/// tokencode, new PIN) becomes a challenge the host answers, at most `maxSteps` in one login.
public enum Dialogue {
    /// Follow-up steps per login, as in the module's local mode.
    public static let maxSteps = 2

    /// The answer for `result`, and the challenge to store when it asks for another step.
    public static func respond(to result: VerifyResult, user: String, host: String, stepsLeft: Int, now: Int64)
        throws(StoreError) -> (VerifyResponse, PendingChallenge?) {
        func failure(_ info: String? = nil, _ outcome: VerifyOutcome = .rejected, reason: String) -> VerifyResponse {
            VerifyResponse(result: .reject, outcome: outcome, reason: reason, failures: result.failures, lockedNow: result.lockedNow, info: info)
        }
        func challenge(_ kind: ChallengeKind, serial: String, position: Int64 = 0, pinMode: PINMode = .none) throws(StoreError)
            -> (VerifyResponse, PendingChallenge?) {
            guard stepsLeft > 0 else { return (failure(reason: "too many dialogue steps in one login"), nil) }
            let (pending, info) = try PendingChallenge.step(kind, user: user, host: host, serial: serial, position: position,
                                                            pinMode: pinMode, remaining: stepsLeft - 1, now: now)
            return (VerifyResponse(result: .challenge, serial: serial, challenge: info, reason: result.note.isEmpty ? nil : result.note,
                                   failures: result.failures), pending)
        }

        switch result.outcome {
        case .accepted(let serial, let digits):
            return (VerifyResponse(result: .accept, serial: serial, codeDigits: digits, reason: result.note.isEmpty ? nil : result.note), nil)
        case .acceptedRecoveryCode(let remaining):
            return (VerifyResponse(result: .accept, outcome: .recoveryCode, serial: "recovery", reason: "recovery code, \(remaining) left",
                                   info: DialogueText.recoveryCodeAccepted(remaining: remaining)), nil)
        case .locked:
            return (VerifyResponse(result: .locked, reason: "locked after repeated failures", failures: result.failures), nil)
        case .replayed(let serial):
            return (failure(DialogueText.replayed, .replayed, reason: "replayed code (token \(serial))"), nil)
        case .rejected:
            return (failure(reason: result.note.isEmpty ? "wrong code" : result.note), nil)
        case .nextCodeRequired(let serial, let position):
            return try challenge(.nextCode, serial: serial, position: position)
        case .newPINRequired(let serial, let pinMode):
            return try challenge(.newPIN, serial: serial, pinMode: pinMode)
        }
    }

    /// new_pin answered: the PIN rules decide; a good PIN is set and a passcode made with it
    /// is asked for (the same step count: setting the PIN was part of this step).
    public static func afterNewPIN(_ pending: PendingChallenge, pin: [UInt8], now: Int64) throws(StoreError) -> (VerifyResponse, PendingChallenge?, setPIN: Bool) {
        if let problem = pin.withUnsafeBufferPointer({ PINRules.problem($0, mode: pending.pinMode) }) {
            return (VerifyResponse(result: .reject, serial: pending.serial, reason: "new PIN refused by the PIN rules",
                                   error: DialogueText.pinRefused(problem)), nil, false)
        }
        let (next, info) = try PendingChallenge.step(.passcode, user: pending.user, host: pending.host, serial: pending.serial,
                                                     pinMode: pending.pinMode, remaining: pending.remaining, now: now)
        return (VerifyResponse(result: .challenge, serial: pending.serial, challenge: info, reason: "new PIN set"), next, true)
    }

    public static let unknownChallenge = VerifyResponse(result: .reject, reason: "unknown, expired or already answered challenge")
}
