import ArgumentParser
import Foundation
import Glibc
@testable import securotp
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPStore
import Testing

/// `securotp doctor` and `securotp test` run in-process against an injected context, as the
/// token commands do: what they print is collected, the store is the one the context names.
@Suite("securotp doctor and test in-process")
struct DiagnosticCommandTests {
    @Test("doctor: a missing store is an error naming securotp init; a store that opens is ok")
    func doctor() async throws {
        let pamDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-pam-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: pamDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: pamDirectory) }
        let options = ["--pam-dir", pamDirectory, "--sshd-config", pamDirectory + "/sshd_config"]

        // No store yet in this state directory: every login would be refused.
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-none-\(UUID().uuidString)").path
        var settings = Settings()
        settings.paths = StorePaths(stateDirectory: missing)
        let printed = CommandTests.Printed()
        let context = CommandContext(settings: settings, output: CommandOutput { printed.append($0) })
        await #expect(throws: ExitCode(78)) { try await Doctor.parse(options).run(in: context) }
        let report = printed.take()
        #expect(report.contains("error    key file \(missing)/securotp.key does not exist"), "\(report)")
        #expect(report.contains("Fix: securotp init --state-dir \(missing)"), "\(report)")
        #expect(report.contains("warning  no PAM service in \(pamDirectory) uses pam_securotp yet"), "\(report)")
        #expect(report.hasSuffix("warnings.\n") || report.hasSuffix("warning.\n"), "\(report)")

        // The world's store exists and opens.
        let world = try CommandTests.world()
        defer { try? FileManager.default.removeItem(atPath: world.directory) }
        try await Doctor.parse(options).run(in: world.context)
        let healthy = world.printed.take()
        #expect(healthy.contains("ok       store opens: schema"), "\(healthy)")
        #expect(healthy.contains("\n0 errors,"), "\(healthy)")
    }

    @Test("test: a stack that lets the user in, one that refuses, and an unknown user", .enabled(if: geteuid() == 0, "runs a real PAM stack as root"))
    func testLogin() async throws {
        let world = try CommandTests.world()
        defer { try? FileManager.default.removeItem(atPath: world.directory) }
        let name = "securotp-cli-\(UUID().uuidString.prefix(8).lowercased())"
        let permit = "/etc/pam.d/\(name)-permit", deny = "/etc/pam.d/\(name)-deny"
        try "auth required pam_permit.so\naccount required pam_permit.so\n".write(toFile: permit, atomically: true, encoding: .utf8)
        try "auth required pam_deny.so\naccount required pam_permit.so\n".write(toFile: deny, atomically: true, encoding: .utf8)
        defer {
            unlink(permit)
            unlink(deny)
        }

        try await TestLogin.parse(["root", "--service", "\(name)-permit"]).run(in: world.context)
        #expect(world.printed.take() == """
            Testing root through /etc/pam.d/\(name)-permit:
            \(name)-permit: root would be let in (authentication and account check passed)

            """)

        await #expect(throws: ExitCode(1)) { try await TestLogin.parse(["root", "--service", "\(name)-deny"]).run(in: world.context) }
        #expect(world.printed.take() == "Testing root through /etc/pam.d/\(name)-deny:\n")

        await #expect(throws: CLIError.self) { try await TestLogin.parse(["no-such-user-\(name)"]).run(in: world.context) }
        #expect(world.printed.take().isEmpty)
    }
}
