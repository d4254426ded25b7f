// "Every host-facing outcome is the same as what the local store would decide for the same
// input": the same token imported into a local store and into a validator's store, the same
// sequence of answers through a local-mode and a remote-mode login, step by step — the same
// PAM results and the same prompts and messages.
import Foundation
import Testing

@Suite("Remote mode decides as local mode does: one sequence of answers, two stores")
struct RemoteParityTests {
    struct Step {
        let name: String
        let user: String
        let responses: [String]
        var silent = false
    }

    /// Runs every step through both services and compares what the user saw and the result.
    private func compare(_ world: RemoteWorld, local: String, remote: String, _ steps: [Step]) throws {
        for step in steps {
            let here = try world.box.login(local, step.user, step.responses, silent: step.silent)
            let there = try world.box.login(remote, step.user, step.responses, silent: step.silent)
            #expect(here.status == there.status, "\(step.name): local \(here.status), remote \(there.status)\n\(here)\n\(there)")
            #expect(here.conversation == there.conversation, "\(step.name): the user saw different things\n\(here)\n\(there)")
        }
    }

    @Test("HOTP: accept, replay, wrong, look-ahead, next-code dialogue, unknown users, lockout")
    func hotpSequence() throws {
        let world = try RemoteWorld()
        let secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
        let uri = world.box.path("token.txt")
        try world.box.write("otpauth://hotp/Parity:root?secret=\(secret)&issuer=Parity&counter=0\n", to: uri)
        for state in [world.box.state, world.validatorState] {
            let imported = try world.box.cli(["import", "root", uri], stateDirectory: state)
            try #require(imported.status == 0, "\(imported)")
        }
        let policy = ["deny": "3", "unlock_time": "0"]
        let local = try world.box.service("local", policy.map { "\($0.key)=\($0.value)" })
        let remote = try world.service("remote", try world.start(policy))

        func code(_ counter: UInt64) throws -> String { try Oath.hotp(secret, counter: counter) }
        let wrong = try Oath.wrongHOTP(secret)
        try compare(world, local: local, remote: remote, [
            Step(name: "right code", user: "root", responses: [try code(0)]),
            Step(name: "replay", user: "root", responses: [try code(0)]),
            Step(name: "replay, PAM_SILENT", user: "root", responses: [try code(0)], silent: true),
            Step(name: "wrong code", user: "root", responses: [wrong]),
            Step(name: "within the look-ahead", user: "root", responses: [try code(3)]),
            Step(name: "an older code after it", user: "root", responses: [try code(2)]),
            Step(name: "beyond the look-ahead, then the next code", user: "root", responses: [try code(20), try code(21)]),
            Step(name: "beyond the look-ahead, then a wrong one", user: "root", responses: [try code(30), wrong]),
            Step(name: "a user NSS does not know", user: StackTests.unknownUser, responses: [wrong]),
            Step(name: "a name no user can have", user: "-not a name", responses: [wrong]),
            Step(name: "wrong again", user: "root", responses: [wrong]),
            Step(name: "and again", user: "root", responses: [wrong]),
            Step(name: "and again", user: "root", responses: [wrong]),
            Step(name: "the right code while locked", user: "root", responses: [try code(40)]),
        ])
        let locked = try world.box.listTokens("root").first?["user_locked"] as? Bool
        #expect(locked == true, "the sequence ends locked locally")
        #expect(try world.box.listTokens("root", stateDirectory: world.validatorState).first?["user_locked"] as? Bool == locked)
    }

    @Test("SecurID: new-PIN dialogue with differing entries, a refused PIN, a good PIN, and passcodes with it")
    func securIDSequence() throws {
        let world = try RemoteWorld()
        let ctf = try TokenFlowTests.ctfA()
        for state in [world.box.state, world.validatorState] {
            let imported = try world.box.cli(["import", "root", ctf], stateDirectory: state)
            try #require(imported.status == 0, "\(imported)")
        }
        let policy = ["deny": "0", "window": "3", "resync_window": "0"]
        let local = try world.box.service("local", policy.map { "\($0.key)=\($0.value)" })
        let remote = try world.service("remote", try world.start(policy))
        let step = TokenFlowTests.stepStart()
        func code(_ time: Int64, pin: String = "0000") throws -> String { try TokenFlowTests.stoken(ctf, at: time, pin: pin) }
        try compare(world, local: local, remote: remote, [
            Step(name: "PINs differ", user: "root", responses: [try code(step - 30), "2468", "2469"]),
            Step(name: "PIN against the rules", user: "root", responses: [try code(step), "ab12", "ab12"]),
            Step(name: "new PIN, then a passcode with it", user: "root", responses: [try code(step + 30), "2468", "2468", try code(step + 60, pin: "2468")]),
            Step(name: "a passcode with the PIN", user: "root", responses: [try code(step + 90, pin: "2468")]),
        ])
    }
}
