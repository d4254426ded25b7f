// Logins approved, denied or refused on the phone page (docs/push.md, "Phones without an app"),
// in chromium with a virtual authenticator (PhonePageTests.swift has the driver and the world):
// the passkey enrolled from `securotp device add --web`'s link, each login through the real
// libpam loading the real module.
import Foundation
import Glibc
import Testing

@Suite("Logins approved on the phone page: a real module, securotpd and chromium with a passkey", .serialized)
struct PhoneLoginTests {
    static var artifacts: String { Binaries.packageRoot + "/.build/artifacts" }

    @Test("Enrolled from `securotp device add --web`'s link; a login through the real module approved on the page with the prompt's number")
    func approve() throws {
        let world = try PhoneWorld()
        let (link, registered) = try world.enrollPhone("a", user: "root")
        #expect((link["enroll"] as? String ?? "").contains("root"), "the link shows who enrolls: \(link)")
        #expect((link["url"] as? String ?? "").hasSuffix("/app/"), "the code leaves the address bar: \(link)")
        #expect(registered["who"] as? String == "root" && (registered["error"] as? String ?? "").isEmpty, "\(registered)")

        try FileManager.default.createDirectory(atPath: Self.artifacts, withIntermediateDirectories: true)
        // This run's own: CI keeps it (.ci/run), docs/push.md shows a copy (docs/img/phone-approve.png).
        let screenshot = Self.artifacts + "/phone.png"
        try? FileManager.default.removeItem(atPath: screenshot)
        var approved: [String: Any] = [:]
        var shown: [[String: Any]] = []
        let login = try world.login { number in
            shown = PhoneWorld.requests(try world.driver.send(["op": "wait_request", "phone": "a"]))
            approved = try world.driver.send(["op": "answer", "phone": "a", "number": number, "button": "approve", "screenshot": screenshot])
        }
        #expect(login.status == PAM.success, "\(login)\npage: \(approved)")
        #expect(login.prompts.count == 1 && PushPrompt.isApproval(login.prompts.first), "\(login)")
        #expect(PhoneWorld.state(approved) == "approved", "\(approved)")
        #expect((approved["status"] as? String ?? "").hasPrefix("Approved"), "\(approved)")
        let text = shown.first?["text"] as? String ?? ""
        for part in ["root", "web1", world.service, "203.0.113.7", "ssh"] { #expect(text.contains(part), "the request shows \(part): \(text)") }
        #expect(shown.count == 1 && (shown.first?["id"] as? String ?? "").hasPrefix("pr"), "\(shown)")
        #expect(PhoneWorld.pageErrors(approved).isEmpty, "\(approved)")
        // Phone size: a PNG of 390×844 CSS pixels at device scale 2 (IHDR width and height).
        let png = Array((FileManager.default.contents(atPath: screenshot) ?? Data()).prefix(24))
        let size = png.count == 24 ? (png[16..<20].reduce(0) { $0 << 8 | Int($1) }, png[20..<24].reduce(0) { $0 << 8 | Int($1) }) : (0, 0)
        #expect(png.starts(with: [0x89, 0x50, 0x4e, 0x47]) && size == (780, 1688), "\(screenshot): \(size)")
        print("phone page screenshot (390x844): \(screenshot)")
    }

    @Test("A wrong number: the page says so and keeps the request; three fail it, and the login gets the code prompt")
    func wrongNumber() throws {
        let world = try PhoneWorld()
        try world.enrollPhone("a", user: "root")
        var answers: [[String: Any]] = []
        // Enter after the three wrong numbers: a login already waiting is told of each wrong
        // number at once and asked again (PushLoginTests.wrongNumberToldAtOnce).
        let login = try world.login(then: [try Oath.wrongTOTP(world.token.secret)], typing: true) { number in
            try world.driver.send(["op": "wait_request", "phone": "a"])
            for _ in 1...3 { answers.append(try world.driver.send(["op": "answer", "phone": "a", "number": PhoneWorld.other(number), "button": "approve"])) }
            try "\n".write(toFile: world.typedFile, atomically: true, encoding: .utf8)
        }
        #expect(answers.map(PhoneWorld.state) == ["pending", "pending", "failed"], "\(answers)")
        #expect(PhoneWorld.reason(answers.first ?? [:]) == "wrong number")
        let firstError = answers.first.flatMap { $0["error"] as? String } ?? ""
        #expect(firstError.contains("Wrong number"), "\(answers.first ?? [:])")
        #expect(PhoneWorld.requests(answers[0]).count == 1, "the request stays after a wrong number")
        #expect(login.status == PAM.authError, "\(login)")
        #expect(login.prompts.count == 2 && login.prompts.last == "Wrong number typed on your device. Verification code: ", "\(login)")
    }

    @Test("\"I'm not logging in\": the request is denied, the login asks for a code, and the token's code logs in")
    func deny() throws {
        let world = try PhoneWorld()
        try world.enrollPhone("a", user: "root")
        var denied: [String: Any] = [:]
        let login = try world.login(then: [try Oath.totp(world.token.secret)]) { _ in
            try world.driver.send(["op": "wait_request", "phone": "a"])
            denied = try world.driver.send(["op": "answer", "phone": "a", "button": "deny"])
        }
        #expect(PhoneWorld.state(denied) == "denied" && PhoneWorld.requests(denied).isEmpty, "\(denied)")
        #expect(login.status == PAM.success && login.prompts.last == PushPrompt.denied, "\(login)")
    }

    @Test("A replayed assertion: the approval of one login, resent for the next (same number or its own), approves nothing")
    func replay() throws {
        let world = try PhoneWorld()
        try world.enrollPhone("a", user: "root")
        var first: [String: Any] = [:]
        let firstLogin = try world.login { number in
            try world.driver.send(["op": "wait_request", "phone": "a"])
            first = try world.driver.send(["op": "answer", "phone": "a", "number": number, "button": "approve"])
        }
        #expect(firstLogin.status == PAM.success, "\(firstLogin)")
        let sent = try #require(first["sent"] as? [String: Any])
        let body = try #require(sent["body"] as? String)
        let authorization = try #require(sent["authorization"] as? String)
        var original = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])

        var replays: [[String: Any]] = []
        let secondLogin = try world.login(then: [try Oath.wrongTOTP(world.token.secret)]) { number in
            let waiting = try world.driver.send(["op": "wait_request", "phone": "a"])
            let id = try #require(PhoneWorld.requests(waiting).first?["id"] as? String)
            // As sent: the old request is no longer pending.
            replays.append(try world.driver.send(["op": "fetch", "phone": "a", "path": "/v1/device/answer", "body": body, "authorization": authorization]))
            // For the new request with its own number: the signature is over the old statement.
            original["id"] = id
            original["number"] = number
            let moved = String(decoding: try JSONSerialization.data(withJSONObject: original), as: UTF8.self)
            replays.append(try world.driver.send(["op": "fetch", "phone": "a", "path": "/v1/device/answer", "body": moved, "authorization": authorization]))
        }
        for replay in replays {
            let text = replay["text"] as? String ?? ""
            #expect(!text.contains("\"approved\""), "a replay was taken: \(replay)")
        }
        #expect(secondLogin.status == PAM.authError && secondLogin.prompts.count == 2, "\(secondLogin)")
    }

    @Test("A code typed at the login instead: the request leaves the page at once, not at its expiry (the page's wait names what it shows)")
    func typedCode() throws {
        let world = try PhoneWorld()
        try world.enrollPhone("a", user: "root")
        var gone: [String: Any] = [:]
        let login = try world.login(typing: true) { _ in
            try world.driver.send(["op": "wait_request", "phone": "a"])
            try (try Oath.totp(world.token.secret) + "\n").write(toFile: world.typedFile, atomically: true, encoding: .utf8)
            // The request lives 60 s and a wait is held up to 25 s: 8 s is only met by the wake-up.
            gone = try world.driver.send(["op": "wait_no_request", "phone": "a", "timeout": 8000])
        }
        #expect(login.status == PAM.success && login.prompts.count == 1, "\(login)")
        #expect(PhoneWorld.requests(gone).isEmpty && PhoneWorld.pageErrors(gone).isEmpty, "\(gone)")
    }

    @Test("An expired request leaves the page, which says so; the login asks for a code")
    func expired() throws {
        let world = try PhoneWorld(settings: ["push_lifetime": "10"], pushTimeout: 20)
        try world.enrollPhone("a", user: "root")
        var after: [String: Any] = [:]
        let login = try world.login(then: [try Oath.wrongTOTP(world.token.secret)]) { _ in
            try world.driver.send(["op": "wait_request", "phone": "a"])
            after = try world.driver.send(["op": "wait_no_request", "phone": "a", "timeout": 20000])
        }
        #expect((after["status"] as? String ?? "").contains("expired"), "\(after)")
        #expect(login.status == PAM.authError && login.prompts.last == PushPrompt.expired, "\(login)")
    }

    @Test("A passkey of another user approves nothing: that user's page never sees the request nor may answer it, and its key in this phone's place is refused")
    func anotherUsersPasskey() throws {
        let world = try PhoneWorld()
        try world.enrollPhone("a", user: "root")
        try world.enrollPhone("b", user: "daemon")
        var others: [String: Any] = [:]
        var stranger: [String: Any] = [:]
        var swapped: [String: Any] = [:]
        let login = try world.login(then: [try Oath.wrongTOTP(world.token.secret)]) { number in
            let waiting = try world.driver.send(["op": "wait_request", "phone": "a"])
            let id = try #require(PhoneWorld.requests(waiting).first?["id"] as? String)
            others = try world.driver.send(["op": "state", "phone": "b"])
            // daemon's session answers root's request directly.
            stranger = try world.driver.send(["op": "fetch", "phone": "b", "path": "/v1/device/answer",
                                              "body": "{\"id\":\"\(id)\",\"decision\":\"deny\"}", "authorization": others["authorization"] as? String ?? ""])
            // daemon's passkey put into root's phone, and named by the page.
            let credentials = try world.driver.send(["op": "credentials", "phone": "b"])["credentials"] as? [[String: Any]] ?? []
            let credential = try #require(credentials.first)
            try world.driver.send(["op": "add_credential", "phone": "a", "credential": credential])
            let id64 = (credential["credentialId"] as? String ?? "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            try world.driver.send(["op": "use_credential", "phone": "a", "id": id64])
            swapped = try world.driver.send(["op": "answer", "phone": "a", "number": number, "button": "approve"])
        }
        #expect(PhoneWorld.requests(others).isEmpty, "daemon's page lists root's request: \(others)")
        #expect(stranger["status"] as? Int == 404, "\(stranger)")
        #expect(PhoneWorld.state(swapped) != "approved", "\(swapped)")
        #expect(login.status == PAM.authError && login.prompts.count == 2, "\(login)")
    }
}
