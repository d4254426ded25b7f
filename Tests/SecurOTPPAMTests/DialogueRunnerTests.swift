// The module's dialogue runner (DialogueRunner) with a scripted conversation on a real PAM
// handle and a fake deciding side: next code, new PIN, passcode, the step budget.
import CPAM
import SecurOTPStore
import Testing
@testable import SecurOTPPAM

/// A deciding side that answers from a script and records what it was asked.
struct FakeBackend: DialogueBackend {
    var source: String { " [fake]" }
    var outcomes: [StepOutcome]
    var asked: [(step: String, answer: String)] = []
    var tooManyStepsCode: Int32 = PAM_AUTH_ERR

    mutating func answer(_ step: NextStep, _ answer: UnsafeBufferPointer<UInt8>) -> StepOutcome {
        asked.append((step: "\(step)", answer: String(decoding: answer, as: UTF8.self)))
        return outcomes.isEmpty ? .finished(PAM_SYSTEM_ERR) : outcomes.removeFirst()
    }

    func tooManySteps() -> Int32 { tooManyStepsCode }
}

@Suite("Dialogue runner: next code, new PIN, passcode, one step budget")
struct DialogueRunnerTests {
    static let accepted = StepOutcome.concluded(StepReport(.accepted(serial: "T1"), note: ""))
    static let rejected = StepOutcome.concluded(StepReport(.rejected, note: "wrong code", failures: 1))
    static func nextCode(_ counted: Bool = true) -> StepOutcome {
        .next(.nextCode(serial: "T1", prompt: DialogueText.nextCode, reason: "outside the window"), counted: counted)
    }

    @Test("Next code: asked with the token's prompt, the answer goes to the deciding side, its decision ends the login")
    func nextCodeThenAccepted() throws {
        let pam = try ScriptedHandle(["246810"])
        var backend = FakeBackend(outcomes: [Self.accepted])
        let code = DialogueRunner.run(Self.nextCode(), &backend, login: pam.login(), steps: 2)
        #expect(code == PAM_SUCCESS)
        #expect(pam.script.transcript == ["prompt: " + DialogueText.nextCode])
        #expect(backend.asked.map(\.answer) == ["246810"])
    }

    @Test("A decision without a dialogue asks nothing")
    func concludedAtOnce() throws {
        let pam = try ScriptedHandle([])
        var backend = FakeBackend(outcomes: [])
        #expect(DialogueRunner.run(Self.rejected, &backend, login: pam.login(), steps: 2) == PAM_AUTH_ERR)
        #expect(pam.script.transcript.filter { $0.hasPrefix("prompt: ") }.isEmpty && backend.asked.isEmpty)
    }

    @Test("Counted steps are bounded: the third next-code step of a two-step login is not asked")
    func stepBudget() throws {
        let pam = try ScriptedHandle(["1", "2", "3"])
        var backend = FakeBackend(outcomes: [Self.nextCode(), Self.nextCode()], tooManyStepsCode: PAM_MAXTRIES)
        let code = DialogueRunner.run(Self.nextCode(), &backend, login: pam.login(), steps: 2)
        #expect(code == PAM_MAXTRIES)
        #expect(backend.asked.map(\.answer) == ["1", "2"])
        #expect(pam.script.answers == ["3"])
    }

    @Test("New PIN: asked twice; the passcode after it is not counted as a step")
    func newPINThenPasscode() throws {
        let pam = try ScriptedHandle(["2468", "2468", "2468123456"])
        let passcode = StepOutcome.next(.passcode(serial: "T1", prompt: DialogueText.pinSet(.addedByToken)), counted: false)
        var backend = FakeBackend(outcomes: [passcode, Self.accepted])
        let first = StepOutcome.next(.newPIN(serial: "T1", prompt: DialogueText.newPIN(.addedByToken), again: DialogueText.newPINAgain,
                                             rules: .addedByToken), counted: true)
        let code = DialogueRunner.run(first, &backend, login: pam.login(), steps: 1)
        #expect(code == PAM_SUCCESS)
        #expect(pam.script.transcript == ["prompt: " + DialogueText.newPIN(.addedByToken), "prompt: " + DialogueText.newPINAgain,
                                          "prompt: " + DialogueText.pinSet(.addedByToken)])
        #expect(backend.asked.map(\.answer) == ["2468", "2468123456"])
    }

    @Test("New PIN: entries that differ and a PIN against the rules end the login here, never reaching the deciding side")
    func newPINRefusedHere() throws {
        let step = StepOutcome.next(.newPIN(serial: "T1", prompt: "PIN: ", again: "Again: ", rules: .addedByToken), counted: true)
        let differ = try ScriptedHandle(["2468", "2469"])
        var backend = FakeBackend(outcomes: [Self.accepted])
        #expect(DialogueRunner.run(step, &backend, login: differ.login(), steps: 2) == PAM_AUTH_ERR)
        #expect(differ.script.transcript.last == "error: " + DialogueText.pinsDiffer && backend.asked.isEmpty)

        let short = try ScriptedHandle(["12", "12"])
        #expect(DialogueRunner.run(step, &backend, login: short.login(), steps: 2) == PAM_AUTH_ERR)
        #expect(short.script.transcript.last?.hasPrefix("error: PIN refused: ") == true && backend.asked.isEmpty, "\(short.script.transcript)")

        // Without rules (a validator checks them) the PIN goes on as typed.
        let remote = try ScriptedHandle(["12", "12"])
        let unchecked = StepOutcome.next(.newPIN(serial: "T1", prompt: "PIN: ", again: "Again: ", rules: nil), counted: true)
        #expect(DialogueRunner.run(unchecked, &backend, login: remote.login(), steps: 2) == PAM_SUCCESS)
        #expect(backend.asked.map(\.answer) == ["12"])
    }

    @Test("A conversation that fails ends the login with its code; a step's messages come before its prompt")
    func conversationFailureAndMessages() throws {
        let pam = try ScriptedHandle([])
        var backend = FakeBackend(outcomes: [Self.accepted])
        let step = StepOutcome.next(.nextCode(serial: "T1", prompt: "Next: ", reason: "r"), counted: true, info: "Note this.", error: "Careful.")
        #expect(DialogueRunner.run(step, &backend, login: pam.login(), steps: 2) == PAM_CONV_ERR)
        #expect(pam.script.transcript == ["info: Note this.", "error: Careful.", "prompt: Next: "])
        #expect(backend.asked.isEmpty)
    }
}

