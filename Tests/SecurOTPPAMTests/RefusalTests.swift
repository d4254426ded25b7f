// What a refused user is told (docs/security.md, "What a refused user is told"): the line for
// each outcome, when a lock may be named, and the conversation around a check on a real PAM
// handle with a fake check. (libpam keeps pam_set_data only inside a module's call, so what
// carries over between calls on one handle is tested through the real module:
// IntegrationTests.RefusalMessageTests.)
import CPAM
import SecurOTPStore
import Testing
@testable import SecurOTPPAM

/// A check that decides every answer the same way, for the conversation around it.
struct FakeCheck: PasscodeCheck {
    let login: LoginContext
    var decision: StepReport
    var answers: [String] = []
    var challenge: String? { nil }
    var matchedDigits: Int? { nil }

    mutating func prepare() -> Preparation { .ask }

    mutating func check(_ input: UnsafeBufferPointer<UInt8>, countsFailure: Bool) -> Int32 {
        answers.append(String(decoding: input, as: UTF8.self))
        return login.session.conclude(decision, user: login.shownUser)
    }
}

@Suite("What a refused user is told")
struct RefusalTests {
    static let prompt = Settings().prompt
    static let refused = DialogueText.refused

    private func record(_ kind: StepRecord.Kind?, locks: Bool = false, explanation: String? = nil) -> StepRecord {
        let record = StepRecord()
        record.kind = kind
        record.locks = locks
        record.explanation = explanation
        return record
    }

    private func settings(deny: Int, unlockTime: Int64 = 600) -> Settings {
        var settings = Settings()
        settings.policy.deny = deny
        settings.policy.unlockTime = unlockTime
        return settings
    }

    @Test("Without PAM_SILENT: the reason is a message right after the refused answer")
    func reasonAsMessage() throws {
        let pam = try ScriptedHandle(["111111"])
        var check = FakeCheck(login: pam.login(), decision: StepReport(.rejected, note: "wrong code", failures: 1))
        #expect(PAMAuthentication.converse(&check, check.login) == PAM_AUTH_ERR)
        #expect(pam.script.transcript == ["prompt: " + Self.prompt, "error: " + Self.refused])
        #expect(check.answers == ["111111"])
    }

    @Test("With PAM_SILENT: no message, only the prompt")
    func silentShowsNothing() throws {
        let pam = try ScriptedHandle(["111111"])
        var check = FakeCheck(login: pam.login(silent: true), decision: StepReport(.rejected, note: "wrong code", failures: 1))
        #expect(PAMAuthentication.converse(&check, check.login) == PAM_AUTH_ERR)
        #expect(pam.script.transcript == ["prompt: " + Self.prompt])
    }

    @Test("A replay's own message is the reason: not shown twice")
    func replayToldOnce() throws {
        let pam = try ScriptedHandle(["111111"])
        let replay = StepReport(.replayed, note: "token 1", failures: 1, info: DialogueText.replayed)
        var check = FakeCheck(login: pam.login(), decision: replay)
        #expect(PAMAuthentication.converse(&check, check.login) == PAM_AUTH_ERR)
        #expect(pam.script.transcript == ["prompt: " + Self.prompt, "info: " + DialogueText.replayed])
    }

    @Test("The lock is named once this handle's own counted refusals reach deny, not before")
    func lockNamedAfterOwnFailures() {
        let settings = settings(deny: 3, unlockTime: 120)
        var memory = HandleMemory(user: "alice")
        var lines: [String?] = []
        // Locked from the first try on (by others, or by the shared row of unknown names).
        for _ in 1...4 { lines.append(Refusal.reason(after: PAM_AUTH_ERR, record(.locked, locks: true), &memory, settings).line) }
        let locked = "Too many failed codes: locked for 2 minutes; ask an admin to unlock you sooner."
        #expect(lines == [Self.refused, Self.refused, locked, locked])
        #expect(memory.failures == 4)
    }

    @Test("A lock is never named when the row is not locked, in remote mode, or with deny=0")
    func lockNotNamed() {
        var memory = HandleMemory(user: "alice", failures: 10)
        #expect(Refusal.reason(after: PAM_AUTH_ERR, record(.refused), &memory, settings(deny: 3)).line == Self.refused)
        var remote = settings(deny: 3)
        remote.remote.address = ValidatorAddress(parsing: "https://validator.example:8443")
        #expect(remote.remote.isEnabled)
        #expect(Refusal.reason(after: PAM_AUTH_ERR, record(.locked, locks: true), &memory, remote).line == Self.refused)
        #expect(Refusal.reason(after: PAM_AUTH_ERR, record(.locked, locks: true), &memory, settings(deny: 0)).line == Self.refused)
    }

    @Test("Only the store's counted refusals count; a success starts the count again")
    func counting() {
        var memory = HandleMemory(user: "alice")
        let settings = settings(deny: 2)
        // A refusal no store decided (an over-long answer, a PIN entered twice differently).
        let uncounted = Refusal.reason(after: PAM_AUTH_ERR, record(nil, explanation: DialogueText.pinsDiffer), &memory, settings)
        #expect(uncounted.line == DialogueText.pinsDiffer && uncounted.told && memory.failures == 0)
        _ = Refusal.reason(after: PAM_AUTH_ERR, record(.refused), &memory, settings)
        #expect(memory.failures == 1)
        #expect(Refusal.reason(after: PAM_SUCCESS, record(nil), &memory, settings).line == nil && memory.failures == 0)
    }

    @Test("The lock line names the duration in minutes, else seconds, or the admin")
    func lockLine() {
        #expect(DialogueText.locked(unlockTime: 60) == "Too many failed codes: locked for 1 minute; ask an admin to unlock you sooner.")
        #expect(DialogueText.locked(unlockTime: 600) == "Too many failed codes: locked for 10 minutes; ask an admin to unlock you sooner.")
        #expect(DialogueText.locked(unlockTime: 90) == "Too many failed codes: locked for 90 seconds; ask an admin to unlock you sooner.")
        #expect(DialogueText.locked(unlockTime: 0) == "Too many failed codes: locked until an admin unlocks you.")
    }

    @Test("Unavailable store or validator: its own line; other codes: nothing")
    func otherResults() {
        var memory = HandleMemory(user: "alice")
        #expect(Refusal.reason(after: PAM_AUTHINFO_UNAVAIL, record(nil), &memory, Settings()).line == DialogueText.unavailable)
        #expect(Refusal.reason(after: PAM_CONV_ERR, record(nil), &memory, Settings()).line == nil)
        #expect(Refusal.reason(after: PAM_IGNORE, record(nil), &memory, Settings()).line == nil)
    }

    @Test("The handle's memory reads back only for its user, and survives damaged text")
    func memoryEncoding() {
        let memory = HandleMemory(user: "alice", failures: 3, pending: DialogueText.refused)
        func decode(_ text: String, _ user: String) -> HandleMemory {
            Array(text.utf8).withUnsafeBufferPointer { HandleMemory(decoding: $0, user: user) }
        }
        let back = decode(memory.encoded, "alice")
        #expect(back.failures == 3 && back.pending == DialogueText.refused && back.user == "alice")
        let other = decode(memory.encoded, "bob")
        #expect(other.failures == 0 && other.pending == nil && other.user == "bob")
        for damaged in ["", "x\u{1}y\u{1}alice", "-1\u{1}\u{1}alice", "3\u{1}alice", "99999999999999999999999\u{1}\u{1}alice"] {
            let fresh = decode(damaged, "alice")
            #expect(fresh.failures == 0 && fresh.pending == nil, "\(damaged.debugDescription)")
        }
        // A user name may contain the separator: it is the last field, read whole.
        let odd = HandleMemory(user: "a\u{1}b", failures: 1)
        #expect(decode(odd.encoded, "a\u{1}b").failures == 1)
    }
}
