// The phone page (docs/push.md, "Phones without an app") in a real browser: Debian's chromium,
// headless, driven by Playwright (tests/webapp/phone_driver.py, from .build/venv), each phone
// with a DevTools virtual authenticator (ctap2, internal, user verification). securotpd serves
// the page and the API on http://localhost:PORT (loopback HTTP is a secure context); the
// passkey is enrolled from `securotp device add --web`'s link; logins go through the real
// libpam loading the real module, whose prompt's number the test types on the page.
import Foundation
import Glibc
import Testing

/// tests/webapp/phone_driver.py: one JSON command per line in, one JSON answer per line out.
final class PhoneDriver {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errorLog: String
    private var buffered = Data()

    static var python: String { Binaries.packageRoot + "/.build/venv/bin/python3" }
    static var script: String { Binaries.packageRoot + "/tests/webapp/phone_driver.py" }

    init(errorLog: String) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw HarnessError("\(Self.python) does not exist: run scripts/install-deps.sh test (it makes the venv with Playwright)")
        }
        _ = try Tools.require("/usr/bin/chromium", package: "chromium")
        self.errorLog = errorLog
        FileManager.default.createFile(atPath: errorLog, contents: nil)
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [Self.script, "300"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: errorLog)
        try process.run()
        let ready = try readAnswer()
        guard ready["ready"] as? Bool == true else { throw HarnessError("the phone driver did not start: \(ready)") }
    }

    deinit {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
    }

    private func readAnswer() throws -> [String: Any] {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffered[buffered.startIndex..<newline]
                buffered.removeSubrange(buffered.startIndex...newline)
                guard let object = try JSONSerialization.jsonObject(with: line) as? [String: Any] else {
                    throw HarnessError("the phone driver printed no JSON object: \(String(decoding: line, as: UTF8.self))")
                }
                return object
            }
            let more = output.fileHandleForReading.availableData
            if more.isEmpty {
                let log = (try? String(contentsOfFile: errorLog, encoding: .utf8)) ?? ""
                throw HarnessError("the phone driver ended:\n\(log)")
            }
            buffered.append(more)
        }
    }

    /// Runs one command; a failed one (a selector never appeared, a page error) throws.
    @discardableResult
    func send(_ command: [String: Any]) throws -> [String: Any] {
        var line = try JSONSerialization.data(withJSONObject: command)
        line.append(UInt8(ascii: "\n"))
        try input.fileHandleForWriting.write(contentsOf: line)
        let answer = try readAnswer()
        guard answer["ok"] as? Bool == true else { throw HarnessError("phone driver, \(command["op"] ?? "?"): \(answer["error"] ?? answer)") }
        return answer
    }
}

/// One validator with public_url on localhost, a host credential, root's TOTP token, a PAM
/// service asking the validator, and the browser.
final class PhoneWorld {
    let box: Sandbox
    let validatorState: String
    let validator: Validator
    let publicURL: String
    let service: String
    let token: Enrollment
    /// An admin credential: `securotp --server` asks the validator, which knows public_url.
    let adminCredential: String
    let driver: PhoneDriver
    private let numberFile: String
    /// What the user types at the push prompt instead of pressing Enter (`login(typing:)`).
    let typedFile: String
    private let script: String

    /// `settings`: more of securotpd.conf (push_lifetime); `pushTimeout`: the module's;
    /// `web`: public_url set (without it the page loads but no passkey can be enrolled).
    init(settings: [String: String] = [:], pushTimeout: Int = 20, web: Bool = true) throws {
        box = try Sandbox()
        validatorState = box.path("validator")
        let credential = try RemoteWorld.addHost(box, state: validatorState, name: "web1")
        token = try box.enroll("root", stateDirectory: validatorState)
        adminCredential = box.path("admin.cred")
        let admin = try box.cli(["admin", "add", "ops", "--output", adminCredential], stateDirectory: validatorState)
        guard admin.status == 0 else { throw HarnessError("admin add failed:\n\(admin)") }
        // public_url must name the port before securotpd starts: take a free one.
        let port = try SilentListener.closedPort()
        publicURL = "http://localhost:\(port)"
        validator = try Validator(box, state: validatorState, settings: (web ? ["public_url": publicURL] : [:]).merging(settings) { _, new in new }, pki: nil,
                                  listen: "127.0.0.1:\(port)")
        service = try box.service("phone-e2e", ["validator=" + validator.url, "host_credential=" + credential, "push_timeout=\(pushTimeout)"],
                                  stateDirectory: box.path("host"))
        numberFile = box.path("number")
        typedFile = box.path("typed")
        script = box.path("login.sh")
        // The user at the login: notes the prompt's number for the phone, and presses Enter at
        // once (the module then waits for the phone's answer) — or, with PHONE_TYPED_FILE, waits
        // for that file and types its line instead (a code, not the phone).
        try box.write("""
            #!/bin/sh
            printf '%s' "$PAM_CHECK_PROMPT" | sed -n 's/^Approve on your device with number \\([0-9]\\{6\\}\\), or type a code: $/\\1/p' > "$PHONE_NUMBER_FILE.tmp"
            mv "$PHONE_NUMBER_FILE.tmp" "$PHONE_NUMBER_FILE"
            if [ -n "${PHONE_TYPED_FILE:-}" ]; then
                while [ ! -s "$PHONE_TYPED_FILE" ]; do sleep 0.05; done
                head -n 1 "$PHONE_TYPED_FILE"
            else
                echo
            fi
            """, to: script, mode: 0o755)
        driver = try PhoneDriver(errorLog: box.path("driver.log"))
    }

    /// `securotp --server URL device add USER --web --format json`: the activation link.
    func webDeviceLink(_ user: String) throws -> String {
        let added = try box.cli(["--server", validator.url, "--credential", adminCredential, "device", "add", user, "--web", "--format", "json"])
        guard added.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any],
              let url = object["url"] as? String else { throw HarnessError("device add --web failed:\n\(added)") }
        return url
    }

    /// A phone that opened USER's link and created its passkey: (what the link showed, the page after).
    @discardableResult
    func enrollPhone(_ phone: String, user: String) throws -> (link: [String: Any], registered: [String: Any]) {
        let link = try webDeviceLink(user)
        try driver.send(["op": "phone", "phone": phone])
        let opened = try driver.send(["op": "goto", "phone": phone, "url": link])
        let registered = try driver.send(["op": "register", "phone": phone])
        return (opened, registered)
    }

    /// A login as root: its push prompt's number goes to `act` (the phone's part), then the
    /// login runs on to `more` answers.
    func login(then more: [String] = [], typing: Bool = false, act: (String) throws -> Void) throws -> ProcessResult {
        unlink(numberFile)
        unlink(typedFile)
        let child = try box.startLogin(service, "root", ["!/bin/sh " + script] + more, environment: [
            "PHONE_NUMBER_FILE": numberFile, "PAM_CHECK_RHOST": "203.0.113.7", "PAM_CHECK_TTY": "ssh",
        ].merging(typing ? ["PHONE_TYPED_FILE": typedFile] : [:]) { _, new in new })
        do {
            let deadline = Date().addingTimeInterval(30)
            var number = ""
            while number.isEmpty {
                number = ((try? String(contentsOfFile: numberFile, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
                if number.isEmpty {
                    guard Date() < deadline else { throw HarnessError("no push prompt within 30 s") }
                    usleep(20_000)
                }
            }
            try act(number)
        } catch {
            kill(child.pid, SIGKILL)
            let result = try? child.wait(timeout: 5)
            throw HarnessError("\(error)\nlogin: \(result.map { "\($0)" } ?? "?")\nvalidator: \(validator.child.errorOutput)")
        }
        return try child.wait(timeout: 60)
    }

    /// A six-digit number other than `number`.
    static func other(_ number: String) -> String { String(number.map { $0 == "9" ? "0" : Character(String(($0.wholeNumberValue ?? 0) + 1)) }) }

    /// The page's answer to the validator's answer.
    static func state(_ answer: [String: Any]) -> String? { (answer["answer"] as? [String: Any])?["state"] as? String }
    static func reason(_ answer: [String: Any]) -> String? { (answer["answer"] as? [String: Any])?["reason"] as? String }
    static func requests(_ answer: [String: Any]) -> [[String: Any]] { answer["requests"] as? [[String: Any]] ?? [] }

    /// Console lines that show a broken page: a script error or a CSP violation.
    static func pageErrors(_ answer: [String: Any]) -> [String] {
        (answer["console"] as? [String] ?? []).filter { $0.hasPrefix("pageerror") || $0.contains("Content Security Policy") || $0.hasPrefix("error") }
    }
}

@Suite("The phone page in chromium, as securotpd serves it")
struct PhonePageTests {
    @Test("The page securotpd serves computes the push statement and challenge of Tests/Vectors/push.json, and loads without a CSP violation")
    func statementVectors() throws {
        let world = try PhoneWorld(web: false)
        try world.driver.send(["op": "phone", "phone": "a"])
        let opened = try world.driver.send(["op": "goto", "phone": "a", "url": world.publicURL + "/app/"])
        #expect(PhoneWorld.pageErrors(opened).isEmpty, "\(opened)")
        let vectors = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Binaries.packageRoot + "/Tests/Vectors/push.json")))
        let all = try #require(vectors as? [String: Any])
        var context = try #require(all["context"] as? [String: Any])
        let number = try #require(context.removeValue(forKey: "number") as? String)
        let device = try #require(context.removeValue(forKey: "device") as? String)
        // The API sends expires as a number.
        context["expires"] = Int(try #require(context["expires"] as? String))
        let computed = try world.driver.send(["op": "challenge", "phone": "a", "request": context, "number": number, "device": device])
        #expect(computed["statement"] as? String == all["statement_hex"] as? String)
        #expect(computed["challenge"] as? String == all["challenge_hex"] as? String)
    }
}
