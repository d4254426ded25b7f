// docs/errors.md's codes as an admin meets them: the real module through libpam writes them at
// the start of its syslog lines, the CLIs on their one line of standard error.
import Foundation
import Glibc
import SecurOTPCore
import Testing

@Suite("Error codes from running components (docs/errors.md)")
struct ErrorCodeTests {
    /// The text after PAM's prefix `pam_securotp(service:auth): ` of each module line.
    static func moduleTexts(_ lines: [String]) -> [String] {
        lines.compactMap { line in line.range(of: "(securotp-it:auth): ").map { String(line[$0.upperBound...]) } }
    }

    static func logged(_ code: ModuleLogCode, _ lines: [String]) -> Bool {
        moduleTexts(lines).contains { $0.hasPrefix("\(code.rawValue): ") }
    }

    @Test("Module: a bad option, an unreadable store, a wrong and a right code each log their code; every line starts with one",
          .enabled(if: SyslogCapture.available, "needs root and mount namespaces (unshare)"))
    func moduleLines() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let log = try SyslogCapture(box)

        let misconfigured = try box.service("securotp-it", ["frobnicate=1"])
        #expect(try log.login(box, misconfigured, "root", ["123456"]).status == PAM.serviceError)
        var lines = log.lines()
        #expect(Self.logged(.configurationError, lines), "\(lines)")

        let service = try box.service()
        let key = box.state + "/securotp.key"
        try #require(chmod(key, 0o644) == 0)
        #expect(try log.login(box, service, "root", [try Oath.hotp(token.secret, counter: 0)]).status == PAM.authInfoUnavailable)
        try #require(chmod(key, 0o600) == 0)
        lines += log.lines()
        #expect(Self.logged(.storeUnavailable, lines) || Self.logged(.methodsUnreadable, lines), "\(lines)")

        #expect(try log.login(box, service, "root", [try Oath.wrongHOTP(token.secret)]).status == PAM.authError)
        #expect(try log.login(box, service, "root", [try Oath.hotp(token.secret, counter: 0)]).status == PAM.success)
        lines += log.lines()
        #expect(Self.logged(.codeRejected, lines), "\(lines)")
        #expect(Self.logged(.codeAccepted, lines), "\(lines)")

        let texts = Self.moduleTexts(lines)
        #expect(texts.count >= 4, "\(lines)")
        for text in texts {
            #expect(text.hasPrefix("SOTP-M") && ModuleLogCode(rawValue: String(text.prefix(9))) != nil, "a line without a known code: \(text)")
        }
    }

    @Test("Module: an unreachable validator with failmode=secure logs SOTP-M047",
          .enabled(if: SyslogCapture.available, "needs root and mount namespaces (unshare)"))
    func validatorUnreachable() throws {
        let world = try RemoteWorld()
        let url = "https://127.0.0.1:\(try SilentListener.closedPort())"
        let log = try SyslogCapture(world.box)
        let secure = try world.box.service("securotp-it", world.arguments(url), stateDirectory: world.hostState)
        #expect(try log.login(world.box, secure, "root", ["123456"]).status == PAM.authInfoUnavailable)
        let lines = log.lines()
        #expect(Self.logged(.validatorUnavailableDenied, lines), "\(lines)")
    }

    @Test("CLI: securotp-authenticator prints its code and exits with the code's status")
    func authenticatorCode() throws {
        let box = try Sandbox()
        let result = try Run.run(try Binaries.path("securotp-authenticator"), ["--data-dir", box.path("phone"), "code", "0000000000"])
        let code = CLIErrorCode.allCases.first { result.stderr.hasPrefix("securotp-authenticator: error \($0.rawValue): ") }
        #expect(code != nil && result.status == code?.exitStatus, "\(result)")
    }
}
