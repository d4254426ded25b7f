import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// What the verification steps of one pam_authenticate call decided, in the terms the user may
/// be told: filled in by `PAMSession.conclude` and by every message shown (or withheld for
/// PAM_SILENT), read once the call's result is known (`Refusal.tell`).
final class StepRecord {
    /// A refusal decided (and counted) by the store, a validator or the offline codes.
    enum Kind {
        case refused
        case replayed
        case locked
    }

    var kind: Kind?
    /// The step locked the user, or found the user locked.
    var locks = false
    /// The last message of the step (shown, or withheld for PAM_SILENT): it explains the refusal.
    var explanation: String?

    func reset() {
        kind = nil
        locks = false
        explanation = nil
    }
}

/// What one PAM handle remembers from one pam_authenticate call to the next: sudo asks up to
/// three times on one handle (PAM_SILENT, so no message reaches the user), login once per try.
/// (sshd runs each keyboard-interactive try in a child process of its own: nothing carries
/// over there.) Kept with pam_set_data — which libpam allows only inside a module's call — so
/// it ends with the handle; nothing of it is written anywhere.
struct HandleMemory {
    static let key = "pam_securotp.previous-attempt"

    /// The user of the calls remembered (another user starts afresh).
    var user: String
    /// The store's counted refusals of `user` in a row on this handle.
    var failures = 0
    /// Why the previous call refused, to put before the next prompt when messages are silenced.
    var pending: String?

    static func load(_ session: PAMSession, user: String) -> HandleMemory {
        var data: UnsafeRawPointer?
        guard pam_get_data(session.handle, key, &data) == PAM_SUCCESS, let data else { return HandleMemory(user: user) }
        let text = data.assumingMemoryBound(to: UInt8.self)
        return HandleMemory(decoding: UnsafeBufferPointer(start: text, count: strlen(data.assumingMemoryBound(to: CChar.self))), user: user)
    }

    func save(_ session: PAMSession) {
        guard let copy = encoded.withCString({ strdup($0) }) else { return }
        if pam_set_data(session.handle, Self.key, copy, { _, data, _ in free(data) }) != PAM_SUCCESS { free(copy) }
    }

    init(user: String, failures: Int = 0, pending: String? = nil) {
        self.user = user
        self.failures = failures
        self.pending = pending
    }

    /// "failures \u{1} pending \u{1} user", as `save` keeps it.
    var encoded: String { "\(failures)\u{1}\(pending ?? "")\u{1}\(user)" }

    /// What `encoded` wrote, if it was written for `user`; a fresh memory otherwise.
    init(decoding bytes: UnsafeBufferPointer<UInt8>, user: String) {
        self.init(user: user)
        var fields: [[UInt8]] = [[]]
        for byte in bytes {
            if byte == 1, fields.count < 3 { fields.append([]) } else { fields[fields.count - 1].append(byte) }
        }
        guard fields.count == 3, String(decoding: fields[2], as: UTF8.self) == user,
              let failures = Int(String(decoding: fields[0], as: UTF8.self)), failures >= 0 else { return }
        self.failures = failures
        pending = fields[1].isEmpty ? nil : String(decoding: fields[1], as: UTF8.self)
    }

    /// Takes the pending reason (it is shown once).
    mutating func takePending() -> String? {
        defer { pending = nil }
        return pending
    }
}

/// Why a login was refused, as the user is told it: at once as a message, or — when the
/// application silences messages (PAM_SILENT: sudo) — before the next prompt on the same
/// handle ("Code refused (…). Verification code: "). Never more than a wrong code tells:
/// docs/security.md, "What a refused user is told".
enum Refusal {
    /// Tells the user why `result` refused, and remembers it (and the count) on the handle.
    static func tell(after result: Int32, _ login: LoginContext, _ memory: inout HandleMemory) {
        let session = login.session
        let (line, told) = reason(after: result, session.record, &memory, login.settings)
        if session.silent {
            memory.pending = line
        } else {
            memory.pending = nil
            if let line, !told { session.error(line) }
        }
        memory.save(session)
    }

    /// The line for `result` — nil when there is nothing to tell — and whether the step showed
    /// it already (or withheld it for PAM_SILENT). Counts the store's refusals in `memory`.
    static func reason(after result: Int32, _ record: StepRecord, _ memory: inout HandleMemory, _ settings: Settings) -> (line: String?, told: Bool) {
        switch result {
        case PAM_AUTH_ERR:
            if record.kind != nil { memory.failures = memory.failures < Int.max ? memory.failures + 1 : memory.failures }
            if record.locks, mayNameLock(settings, failures: memory.failures) {
                return (DialogueText.locked(unlockTime: settings.policy.unlockTime), false)
            }
            if let explanation = record.explanation { return (explanation, true) }
            return (DialogueText.refused, false)
        case PAM_AUTHINFO_UNAVAIL:
            return (DialogueText.unavailable, false)
        case PAM_SUCCESS:
            memory.failures = 0
            return (nil, false)
        default:
            return (nil, false)
        }
    }

    /// Whether a lock may be named: only in local mode, and only once this handle's own
    /// counted refusals of the user reached `deny` — then the user is locked whoever the name
    /// belongs to (a known user's own row, or the row names NSS does not know share), so the
    /// message depends on nothing but what this client did. Not in remote mode: a validator
    /// answers for a user outside the host's scope like a wrong code but never locks it, so
    /// naming the lock there would tell the scope.
    private static func mayNameLock(_ settings: Settings, failures: Int) -> Bool {
        !settings.remote.isEnabled && settings.policy.deny > 0 && failures >= settings.policy.deny
    }
}
