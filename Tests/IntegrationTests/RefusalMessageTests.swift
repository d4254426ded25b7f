// What a refused user is told (issue 17): the one-line reason as a message, or — when the
// application silences messages as sudo does (PAM_SILENT, up to three pam_authenticate calls
// on one handle) — before the next prompt; and a lock named only when this client's own
// failures caused it, the same for a user with a token, one without and a name NSS does not
// know (docs/security.md, "What a refused user is told").
import Testing

@Suite("What a refused user is told")
struct RefusalMessageTests {
    static let refused = "Code refused (wrong, or locked after repeated failures)."
    static func locked(minutes: Int) -> String {
        "Too many failed codes: locked for \(minutes) minute\(minutes == 1 ? "" : "s"); ask an admin to unlock you sooner."
    }
    static let lockedForGood = "Too many failed codes: locked until an admin unlocks you."
    static let unavailable = "Codes cannot be checked right now; ask an admin."
    /// A user with a token, one without (no nullok: asked and refused), and a name NSS does not know.
    static let users = ["root", "daemon", StackTests.unknownUser]

    @Test("sudo (PAM_SILENT, tries on one handle): a wrong code is told before the next prompt")
    func sudoWrongCodeInNextPrompt() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("sudo-like")
        let login = try box.login(service, "root", [try Oath.wrongHOTP(token.secret), try Oath.hotp(token.secret, counter: 0)],
                                  silent: true, tries: 3)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts == [PAM.defaultPrompt, Self.refused + " " + PAM.defaultPrompt], "\(login)")
        #expect(login.infos.isEmpty && login.errors.isEmpty, "PAM_SILENT: no message, only prompts: \(login)")
    }

    @Test("sudo: a replayed code is told before the next prompt")
    func sudoReplayInNextPrompt() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("sudo-like")
        let first = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        try #require(first.status == PAM.success, "\(first)")
        let login = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0), try Oath.hotp(token.secret, counter: 1)],
                                  silent: true, tries: 3)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.prompts == [PAM.defaultPrompt, PAM.replayInfo + " " + PAM.defaultPrompt], "\(login)")
    }

    @Test("su, login, ssh (messages allowed): a wrong code is told at once, a replay as before")
    func messagesWhenNotSilent() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("su-like")
        let wrong = try box.login(service, "root", [try Oath.wrongHOTP(token.secret)])
        #expect(wrong.status == PAM.authError, "\(wrong)")
        #expect(wrong.errors == [Self.refused] && wrong.infos.isEmpty, "\(wrong)")
        #expect(try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)]).status == PAM.success)
        let replay = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(replay.status == PAM.authError, "\(replay)")
        #expect(replay.infos == [PAM.replayInfo] && replay.errors.isEmpty, "the replay message alone: \(replay)")
        // A new handle starts afresh: nothing carried from another process's refusal.
        let next = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 1)], silent: true)
        #expect(next.status == PAM.success && next.prompts == [PAM.defaultPrompt], "\(next)")
    }

    @Test("An unavailable store is told (not under PAM_SILENT)")
    func unavailableStore() throws {
        let box = try Sandbox()
        let service = try box.service("missing", stateDirectory: box.path("never-created"))
        let login = try box.login(service, "root", ["123456"])
        #expect(login.status == PAM.authInfoUnavailable, "\(login)")
        #expect(login.errors == [Self.unavailable] && login.prompts.isEmpty, "\(login)")
        let silent = try box.login(service, "root", ["123456"], silent: true)
        #expect(silent.status == PAM.authInfoUnavailable && silent.errors.isEmpty, "\(silent)")
    }

    @Test("The failure that locks is named, on one handle, alike for a user with a token, one without and an unknown name",
          arguments: [false, true])
    func lockNamedAlikeForEveryone(silent: Bool) throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("locking", ["deny=2", "unlock_time=600"])
        let wrong = try Oath.wrongHOTP(token.secret)
        var seen: [String: [String]] = [:]
        for user in Self.users {
            // Three tries on one handle: refused, refused and locked (the second failure
            // locks), then the lock named; the fourth answer is never asked for.
            let login = try box.login(service, user, [wrong, wrong, wrong, wrong], silent: silent, tries: 3)
            #expect(login.status == PAM.authError, "\(user): \(login)")
            seen[user] = login.conversation
            if silent {
                #expect(login.prompts == [PAM.defaultPrompt, Self.refused + " " + PAM.defaultPrompt,
                                          Self.locked(minutes: 10) + " " + PAM.defaultPrompt], "\(user): \(login)")
            } else {
                #expect(login.errors == [Self.refused, Self.locked(minutes: 10), Self.locked(minutes: 10)], "\(user): \(login)")
            }
        }
        #expect(seen["daemon"] == seen["root"] && seen[StackTests.unknownUser] == seen["root"], "\(seen)")
    }

    @Test("A lock this client did not cause looks like a wrong code: another unknown name's lock tells nothing")
    func sharedRowTellsNothing() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("locking", ["deny=2", "unlock_time=0"])
        let wrong = try Oath.wrongHOTP(token.secret)
        // Another unknown name locks the row names NSS does not know share (two handles).
        for _ in 1...2 {
            #expect(try box.login(service, "securotp-it-othername", [wrong]).status == PAM.authError)
        }
        var seen: [String: [String]] = [:]
        for user in Self.users {
            let login = try box.login(service, user, [wrong])
            #expect(login.status == PAM.authError, "\(user): \(login)")
            #expect(login.errors == [Self.refused], "\(user): one failure of this client's is not a lock it caused: \(login)")
            seen[user] = login.conversation
        }
        #expect(seen["daemon"] == seen["root"] && seen[StackTests.unknownUser] == seen["root"], "\(seen)")
        // root locked by failures on two handles: the right code, refused, is not called a lock
        // until this client's own failures reach deny on one handle.
        #expect(try box.login(service, "root", [wrong]).errors == [Self.refused])
        let rightWhileLocked = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0), wrong], tries: 2)
        #expect(rightWhileLocked.errors == [Self.refused, Self.lockedForGood], "\(rightWhileLocked)")
    }
}
