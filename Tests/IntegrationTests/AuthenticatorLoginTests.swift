// The issue's proof that a user without a phone gets a real token: the admin enrolls or
// imports a token with `securotp`, the user imports it into `securotp-authenticator` (release
// binary, own store), and the code the authenticator shows logs in through the real libpam and
// pam_securotp.so. Codes are also checked against oathtool and stoken.
import Foundation
import Glibc
import Testing

extension Binaries {
    static func authenticator() throws -> String { try path("securotp-authenticator") }
}

/// SecurID tokens of Tests/Vectors/securid.json and stoken, the independent oracle for their codes.
enum SecurIDVectors {
    /// A: 6 digits, 30 s, PINPad, no password. B: 8 digits, 60 s, PINPad, password Tr0ub4dor&3.
    static func export(_ name: String) throws -> String {
        let url = URL(fileURLWithPath: Binaries.packageRoot + "/Tests/Vectors/securid.json")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        guard let exports = json?["exports"] as? [String: Any], let export = exports[name] as? [String: Any],
              let string = export["string"] as? String else { throw HarnessError("securid.json has no exports.\(name).string") }
        return string
    }

    /// stoken's passcode at a Unix time (PIN 0000: the bare tokencode).
    static func stoken(_ ctf: String, at time: Int64, pin: String = "0000") throws -> String {
        let tool = try Tools.require("/usr/bin/stoken", package: "stoken")
        let result = try Run.run(tool, ["tokencode", "--token=\(ctf)", "--use-time=\(time)", "--pin=\(pin)"])
        let code = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, !code.isEmpty, code.allSatisfy(\.isNumber) else { throw HarnessError("stoken failed:\n\(result)") }
        return code
    }
}

/// `securotp-authenticator --data-dir DIR ...` as a user runs it, in a sandbox of its own.
struct AuthenticatorRunner {
    let binary: String
    let directory: String
    /// Never the runner's own: tests that need another machine ID say so.
    static let cleanEnvironment = ["SECUROTP_MACHINE_ID_FILE": "", "SECUROTP_AUTHENTICATOR_DIR": ""]

    init(_ box: Sandbox, name: String = "authenticator") throws {
        binary = try Binaries.authenticator()
        directory = box.path(name)
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        try Run.run(binary, ["--data-dir", directory] + arguments,
                    environment: Self.cleanEnvironment.merging(environment) { _, new in new })
    }

    /// Runs with `input` on standard input (a pipe, so not a terminal).
    func run(_ arguments: [String], input: String) throws -> ProcessResult {
        let quoted = ([binary, "--data-dir", directory] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        return try Run.run("/bin/sh", ["-c", "printf '%s' \"$SECUROTP_TEST_INPUT\" | " + quoted.joined(separator: " ")],
                           environment: Self.cleanEnvironment.merging(["SECUROTP_TEST_INPUT": input]) { _, new in new })
    }

    /// Runs a command with `--format json` and decodes its output.
    func json(_ arguments: [String], input: String? = nil) throws -> Any {
        let result = try input.map { try run(arguments + ["--format", "json"], input: $0) } ?? run(arguments + ["--format", "json"])
        guard result.status == 0 else { throw HarnessError("securotp-authenticator \(arguments.first ?? "") failed:\n\(result)") }
        do {
            return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        } catch {
            throw HarnessError("securotp-authenticator printed no JSON (\(error)):\n\(result)")
        }
    }

    /// `import SOURCE` → the serial of the only token imported.
    func importOne(_ source: String, _ options: [String] = [], input: String? = nil) throws -> String {
        guard let tokens = try json(["import", source] + options, input: input) as? [[String: Any]], tokens.count == 1,
              let serial = tokens[0]["serial"] as? String else { throw HarnessError("import did not print one token") }
        return serial
    }

    /// `code SERIAL` → its JSON object.
    func code(_ serial: String, _ options: [String] = []) throws -> [String: Any] {
        guard let object = try json(["code", serial] + options) as? [String: Any] else { throw HarnessError("code printed no JSON object") }
        return object
    }
}

@Suite("securotp-authenticator: a user without a phone logs in through libpam with its codes")
struct AuthenticatorLoginTests {
    @Test("TOTP: the admin enrolls, the user pastes the URI into the authenticator, its code logs in once")
    func totpEndToEnd() async throws {
        let box = try Sandbox()
        let enrolled = try box.enroll("root")
        let authenticator = try AuthenticatorRunner(box)
        // The user pastes the printed URI on standard input.
        let serial = try authenticator.importOne("-", input: enrolled.uri + "\n")
        let service = try box.service()

        try await Clock.waitForFreshStep(margin: 5)
        let (codes, oracle) = try Clock.inOneStep { now in
            (try authenticator.code(serial), [try Oath.totp(enrolled.secret, at: now), try Oath.totp(enrolled.secret, at: now + 30)])
        }
        let current = try #require(codes["current"] as? String)
        #expect(current == oracle[0], "the authenticator and oathtool disagree")
        #expect(codes["next"] as? String == oracle[1])

        let login = try box.login(service, "root", [current])
        #expect(login.status == PAM.success, "\(login)")
        let replay = try box.login(service, "root", [current])
        #expect(replay.status == PAM.authError && replay.infos == [PAM.replayInfo], "\(replay)")
    }

    @Test("HOTP: each `code` run shows the next counter's code, and each logs in once")
    func hotpEndToEnd() throws {
        let box = try Sandbox()
        let enrolled = try box.enroll("root", ["--hotp"])
        let authenticator = try AuthenticatorRunner(box)
        let serial = try authenticator.importOne(enrolled.uri)
        let service = try box.service("hotp", ["deny=0"])

        var shown: [String] = []
        for counter in 0..<3 as Range<UInt64> {
            let codes = try authenticator.code(serial)
            #expect(codes["counter"] as? Int == Int(counter) && codes["next"] is NSNull, "\(codes)")
            let current = try #require(codes["current"] as? String)
            #expect(current == (try Oath.hotp(enrolled.secret, counter: counter)))
            let login = try box.login(service, "root", [current])
            #expect(login.status == PAM.success, "counter \(counter): \(login)")
            shown.append(current)
        }
        let replay = try box.login(service, "root", [shown[0]])
        #expect(replay.status == PAM.authError, "\(replay)")
    }

    @Test("SecurID PINPad: the admin imports and sets the PIN, the user's authenticator adds it; the passcode logs in")
    func securIDPINPadEndToEnd() async throws {
        let box = try Sandbox()
        let ctf = try SecurIDVectors.export("A-v2")
        let admin = try box.cli(["import", "root", ctf, "--format", "json"])
        try #require(admin.status == 0, "\(admin)")
        let serial = "987654321098"
        let pin = try Run.run("/bin/sh", ["-c", "printf '2468\\n2468\\n' | '\(box.securotp)' --state-dir '\(box.state)' pin set root \(serial)"])
        try #require(pin.status == 0, "\(pin)")

        let authenticator = try AuthenticatorRunner(box)
        #expect(try authenticator.importOne(ctf) == serial)
        let pinFile = box.path("pin")
        try box.write("2468\n", to: pinFile, mode: 0o600)
        let service = try box.service("securid", ["deny=0", "resync_window=0"])

        try await Clock.waitForFreshStep(margin: 5)
        let (bareCodes, bareOracle) = try Clock.inOneStep { now in
            (try authenticator.code(serial, ["--no-pin"]), try SecurIDVectors.stoken(ctf, at: now))
        }
        let bare = try #require(bareCodes["current"] as? String)
        #expect(bare == bareOracle)
        let refused = try box.login(service, "root", [bare])
        #expect(refused.status == PAM.authError, "the bare tokencode is not the passcode once a PIN is set: \(refused)")

        let (codes, oracle) = try Clock.inOneStep { now in
            (try authenticator.code(serial, ["--pin-file", pinFile]), try SecurIDVectors.stoken(ctf, at: now, pin: "2468"))
        }
        let passcode = try #require(codes["current"] as? String)
        #expect(codes["pin_applied"] as? Bool == true)
        #expect(passcode == oracle, "the authenticator and stoken disagree")
        let login = try box.login(service, "root", [passcode])
        #expect(login.status == PAM.success, "\(login)")
    }
}
