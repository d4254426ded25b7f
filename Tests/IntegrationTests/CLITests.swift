// The admin CLI as an admin and a script see it: enrollment output checked by independent tools
// (oathtool, zbarimg), binding IDs, token limits, token management, error reporting, doctor.
import Foundation
import Glibc
import SecurOTPCore
import Testing

@Suite("Admin CLI: securotp")
struct CLITests {
    // MARK: enrollment output

    @Test("--qr-png: zbarimg decodes the PNG to exactly the printed URI; the file is owner-only")
    func qrPNGDecodesToURI() throws {
        let zbarimg = try Tools.zbarimg()
        let box = try Sandbox()
        let png = box.path("root.png")
        let token = try box.enroll("root", ["--algorithm", "SHA256", "--digits", "8", "--nickname", "phone", "--qr-png", png])
        #expect(try box.mode(of: png) == 0o600, "the PNG holds the secret")

        let decoded = try Run.run(zbarimg, ["--raw", "-q", png])
        #expect(decoded.status == 0, "\(decoded)")
        var text = decoded.stdout
        if text.hasSuffix("\n") { text.removeLast() }
        #expect(text == token.uri, "zbarimg read \(text)")
        #expect(token.uri.contains("secret=\(token.secret)"), "\(token.uri)")
    }

    struct Profile: Sendable, CustomTestStringConvertible {
        let algorithm: String
        let digits: Int
        let period: Int
        var testDescription: String { "\(algorithm)/\(digits) digits/\(period) s" }
    }

    @Test("The enrolled secret and URI agree, and SecurOTPCore's codes for them match oathtool's", arguments: [
        Profile(algorithm: "SHA1", digits: 6, period: 30),
        Profile(algorithm: "SHA256", digits: 7, period: 45),
        Profile(algorithm: "SHA512", digits: 8, period: 60),
    ])
    func codesAgreeWithOathtool(_ profile: Profile) throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--algorithm", profile.algorithm, "--digits", String(profile.digits),
                                            "--period", String(profile.period)])
        #expect(token.algorithm == profile.algorithm && token.digits == profile.digits && token.period == profile.period)
        let algorithm = try #require(HashAlgorithm(name: profile.algorithm))
        let secret = try #require(Base32.decode(token.secret), "secret \(token.secret) is not base32")
        #expect(secret.count == ["SHA1": 20, "SHA256": 32, "SHA512": 64][profile.algorithm], "seed as long as the hash")

        let uri = try OTPAuthURI.parse(token.uri)
        #expect(uri.parameters == OATHParameters(kind: .totp, algorithm: algorithm, digits: profile.digits, period: profile.period))
        #expect(uri.secret.constantTimeEquals(secret), "the URI's secret differs from the printed one")
        #expect(uri.issuer == "securotp")

        for time in [59, 1_111_111_109, 1_234_567_890, 2_000_000_000, Int64(Clock.now())] as [Int64] {
            let ours = String(decoding: OTP.totp(secret: secret, unixTime: time, period: profile.period,
                                                 digits: profile.digits, algorithm: algorithm), as: UTF8.self)
            let theirs = try Oath.totp(token.secret, algorithm: profile.algorithm, digits: profile.digits,
                                       period: profile.period, at: time)
            #expect(ours == theirs, "at \(time)")
        }
    }

    @Test("HOTP enrollment: counter 0 in JSON and URI; codes match oathtool")
    func hotpAgreesWithOathtool() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        #expect(token.kind == "hotp" && token.counter == 0 && token.period == nil)
        #expect(token.uri.hasPrefix("otpauth://hotp/") && token.uri.contains("counter=0"), "\(token.uri)")
        let secret = try #require(Base32.decode(token.secret))
        for counter in 0..<8 as Range<UInt64> {
            let ours = String(decoding: OTP.hotp(secret: secret, counter: counter, digits: 6, algorithm: .sha1), as: UTF8.self)
            #expect(ours == (try Oath.hotp(token.secret, counter: counter)), "counter \(counter)")
        }
    }

    // MARK: binding IDs

    @Test("binding-id: 24 lowercase hex, stable, different per user and per host key")
    func bindingID() throws {
        let box = try Sandbox()
        func id(_ user: String, _ directory: String) throws -> String {
            let result = try box.cli(["binding-id", user], stateDirectory: directory)
            #expect(result.status == 0, "\(result)")
            return result.stdout.trimmingCharacters(in: .newlines)
        }
        let first = try id("root", box.state)
        #expect(first.count == 24 && first.allSatisfy { "0123456789abcdef".contains($0) }, "\(first)")
        #expect(try id("root", box.state) == first, "not stable across runs")
        _ = try box.enroll("root")
        #expect(try id("root", box.state) == first, "changed by enrolling a token")
        #expect(try id("securotp-it-bob", box.state) != first, "same ID for two users")
        #expect(try id("root", box.path("other-host")) != first, "same ID for two state directories (host keys)")
    }

    // MARK: token management

    @Test("max_tokens = 2 in securotp.conf: the third enroll exits 73")
    func maxTokens() throws {
        let box = try Sandbox()
        try box.writeConfig("max_tokens = 2\n")
        _ = try box.enroll("root")
        _ = try box.enroll("root", ["--hotp"])
        let third = try box.cli(["enroll", "root", "--format", "json"])
        #expect(third.status == 73, "\(third)")
        #expect(third.stderrLines.count == 1, "\(third)")
        #expect(third.stdout.isEmpty, "no secret may be printed for a refused token: \(third)")
        #expect(try box.listTokens("root").count == 2)
        // Another user has their own allowance.
        _ = try box.enroll("securotp-it-bob")
    }

    @Test("nickname, delete, reset and status: a deleted token's codes stop working at once")
    func tokenLifecycle() throws {
        let box = try Sandbox()
        let kept = try box.enroll("root", ["--hotp"])
        let doomed = try box.enroll("root", ["--hotp"])
        let service = try box.service("lifecycle", ["deny=0"])

        let named = try box.cli(["nickname", "root", kept.serial, "work phone"])
        #expect(named.status == 0, "\(named)")
        let tokens = try box.listTokens("root")
        #expect(tokens.count == 2)
        #expect(tokens.first { $0["serial"] as? String == kept.serial }?["nickname"] as? String == "work phone")

        let deleted = try box.cli(["delete", "root", doomed.serial])
        #expect(deleted.status == 0, "\(deleted)")
        let deadCode = try box.login(service, "root", [try Oath.hotp(doomed.secret, counter: 0)])
        #expect(deadCode.status == PAM.authError, "a deleted token's code was accepted: \(deadCode)")
        let liveCode = try box.login(service, "root", [try Oath.hotp(kept.secret, counter: 0)])
        #expect(liveCode.status == PAM.success, "\(liveCode)")

        let status = try box.cli(["status", "--format", "json"])
        #expect(status.status == 0, "\(status)")
        let summary = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(summary?["tokens"] as? Int == 1 && summary?["users"] as? Int == 1, "\(status)")

        let reset = try box.cli(["reset", "root"])
        #expect(reset.status == 0, "\(reset)")
        #expect(try box.listTokens("root").isEmpty)
        let afterReset = try box.login(service, "root", [try Oath.hotp(kept.secret, counter: 1)])
        #expect(afterReset.status == PAM.authError, "\(afterReset)")
        #expect(afterReset.prompts == [PAM.defaultPrompt], "\(afterReset)")
    }

    // MARK: errors

    struct BadInput: Sendable, CustomTestStringConvertible {
        let name: String
        /// After `securotp`; SERIAL is replaced by a real serial, STATE by the sandbox's state directory.
        let arguments: [String]
        /// docs/errors.md: the code on stderr, and its exit status.
        let code: CLIErrorCode
        var testDescription: String { "\(name) → \(code.rawValue) (\(code.exitStatus))" }
    }

    @Test("Bad input: one line on stderr with its code, the code's sysexits status, nothing on stdout, no trace", arguments: [
        BadInput(name: "--digits 9", arguments: ["--state-dir", "STATE", "enroll", "root", "--digits", "9"], code: .usage),
        BadInput(name: "--algorithm MD5", arguments: ["--state-dir", "STATE", "enroll", "root", "--algorithm", "MD5"], code: .usage),
        BadInput(name: "--period 0", arguments: ["--state-dir", "STATE", "enroll", "root", "--period", "0"], code: .usage),
        BadInput(name: "unknown subcommand", arguments: ["--state-dir", "STATE", "frobnicate"], code: .usage),
        BadInput(name: "relative --state-dir", arguments: ["--state-dir", "relative/dir", "list"], code: .usage),
        BadInput(name: "user name with ':'", arguments: ["--state-dir", "STATE", "enroll", "bad:user"], code: .invalidInput),
        BadInput(name: "nickname of 33 characters", arguments: ["--state-dir", "STATE", "nickname", "root", "SERIAL", String(repeating: "n", count: 33)], code: .invalidInput),
        BadInput(name: "delete an unknown serial", arguments: ["--state-dir", "STATE", "delete", "root", "0000000000"], code: .notFound),
        BadInput(name: "delete another user's token", arguments: ["--state-dir", "STATE", "delete", "securotp-it-bob", "SERIAL"], code: .notFound),
        BadInput(name: "list without a store", arguments: ["--state-dir", "STATE-missing", "list"], code: .missing),
    ])
    func badInput(_ input: BadInput) throws {
        let box = try Sandbox()
        let token = try box.enroll("root")
        let arguments = input.arguments.map {
            $0 == "SERIAL" ? token.serial : $0.replacingOccurrences(of: "STATE", with: box.state)
        }
        let result = try Run.run(box.securotp, arguments)
        #expect(result.status == input.code.exitStatus, "\(result)")
        #expect(result.stderrLines.count == 1, "expected one line on stderr: \(result)")
        #expect(result.stderr.hasPrefix("securotp: error \(input.code.rawValue): "), "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
        for marker in ["Fatal error", "Stack dump", "stack trace", "Backtrace", "backtrace", "0x0000"] {
            #expect(!result.stderr.contains(marker), "trace on stderr: \(result)")
        }
        // Nothing was changed by the refused command.
        #expect(try box.listTokens("root").map { $0["serial"] as? String } == [token.serial])
    }

    // MARK: doctor

    @Test("doctor flags an 'auth sufficient' pam_securotp line as an error and exits 78")
    func doctorFlagsSufficient() throws {
        let box = try Sandbox()
        _ = try box.enroll("root")
        let pamDirectory = box.path("doctor.d")
        try #require(mkdir(pamDirectory, 0o755) == 0)
        let sshdConfig = box.path("sshd_config")
        try box.write("UsePAM yes\nKbdInteractiveAuthentication yes\n", to: sshdConfig)
        let service = pamDirectory + "/login-2fa"
        func doctor() throws -> ProcessResult {
            try box.cli(["doctor", "--pam-dir", pamDirectory, "--sshd-config", sshdConfig])
        }

        try box.write("auth required pam_unix.so\nauth required \(box.module) state_dir=\(box.state)\n", to: service)
        let clean = try doctor()
        #expect(clean.status == 0, "a required line is fine: \(clean)")
        #expect(!clean.lines.contains { $0.hasPrefix("error") }, "\(clean)")

        try box.write("auth required pam_unix.so\nauth sufficient \(box.module) state_dir=\(box.state)\n", to: service)
        let flagged = try doctor()
        #expect(flagged.status == 78, "\(flagged)")
        let errors = flagged.lines.filter { $0.hasPrefix("error") }
        #expect(errors.count == 1, "\(flagged)")
        #expect(errors.first?.contains("\(service):2") == true && errors.first?.contains("sufficient") == true, "\(flagged)")
    }

    @Test("doctor lists users locked now, who are refused even with the right code")
    func doctorListsLockedUsers() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let pamDirectory = box.path("doctor.d")
        try #require(mkdir(pamDirectory, 0o755) == 0)
        func doctor() throws -> ProcessResult { try box.cli(["doctor", "--pam-dir", pamDirectory]) }
        #expect(try !doctor().lines.contains { $0.contains("locked now") })
        let service = try box.service("lock-now", ["deny=1", "unlock_time=0"])
        #expect(try box.login(service, "root", [try Oath.wrongHOTP(token.secret)]).status == PAM.authError)
        let locked = try doctor()
        #expect(locked.lines.contains { $0.hasPrefix("warning") && $0.contains("locked now: root") && $0.contains("securotp unlock") }, "\(locked)")
        #expect(try box.cli(["unlock", "root"]).status == 0)
        #expect(try !doctor().lines.contains { $0.contains("locked now") })
    }
}
