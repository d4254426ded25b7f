// `securotp doctor` against crafted PAM directories, sshd configurations and remote-mode
// settings (issue 17 §7): each finding names the file, the line and what to do.
import Foundation
import Glibc
import Testing

@Suite("securotp doctor")
struct DoctorTests {
    /// `securotp doctor` on the sandbox's PAM directory and the given sshd configuration.
    private func doctor(_ box: Sandbox, sshdConfig: String? = nil) throws -> ProcessResult {
        try box.cli(["doctor", "--pam-dir", box.pamDirectory, "--sshd-config", sshdConfig ?? box.path("no-sshd_config")])
    }

    @Test("A missing key and database: the error gives securotp init with the files it creates, owner and mode")
    func missingStoreGivesInit() throws {
        let box = try Sandbox()
        let missing = try doctor(box)
        #expect(missing.status == 78, "\(missing)")
        let fix = missing.lines.filter { $0.hasPrefix("error") && $0.contains("securotp init --state-dir \(box.state)") }
        #expect(fix.count == 1, "one error, one fix for both files: \(missing)")
        #expect(fix.first?.contains("\(box.state)/securotp.key") == true && fix.first?.contains("\(box.state)/securotp.db") == true
            && fix.first?.contains("mode 0600") == true, "\(missing)")

        // The fix works: after it, nothing is missing.
        #expect(try box.cli(["init"]).status == 0)
        let fixed = try doctor(box)
        #expect(!fixed.lines.contains { $0.hasPrefix("error") && $0.contains("does not exist") }, "\(fixed)")

        // A database without its key: init would not help (and refuses); restore the key instead.
        #expect(unlink(box.state + "/securotp.key") == 0)
        let keyLost = try doctor(box)
        let restore = keyLost.lines.filter { $0.hasPrefix("error") && $0.contains("securotp.key does not exist") }
        #expect(restore.count == 1 && restore.first?.contains("Restore the key file from backup") == true, "\(keyLost)")
        #expect(!keyLost.lines.contains { $0.contains("securotp init") }, "\(keyLost)")
    }

    @Test("Remote mode: credential, ca_file and /v1/health are checked instead of the local store, each with its fix")
    func remoteModeChecks() throws {
        let world = try RemoteWorld()
        let box = world.box
        let validator = try world.start()
        try world.service("web-2fa", validator)

        let healthy = try doctor(box)
        #expect(healthy.status == 0, "a working remote host has no local store, and needs none: \(healthy)")
        #expect(!healthy.lines.contains { $0.contains("securotp.key") || $0.contains("securotp.db") }, "\(healthy)")
        #expect(healthy.lines.contains { $0.hasPrefix("ok") && $0.contains("host_credential \(world.credential)") }, "\(healthy)")
        #expect(healthy.lines.contains { $0.hasPrefix("ok") && $0.contains("ca_file \(world.pki.caFile)") && $0.contains("1 certificate") }, "\(healthy)")
        #expect(healthy.lines.contains { $0.hasPrefix("ok") && $0.contains("answers /v1/health") }, "\(healthy)")

        // A credential others can read: the module refuses it; doctor says how to fix it.
        #expect(chmod(world.credential, 0o644) == 0)
        let readable = try doctor(box)
        #expect(readable.status == 78, "\(readable)")
        #expect(readable.lines.contains { $0.hasPrefix("error") && $0.contains(world.credential) && $0.contains("chmod 600") }, "\(readable)")
        #expect(chmod(world.credential, 0o600) == 0)

        // A ca_file that holds no certificate.
        let notACertificate = box.path("not-a-ca.pem")
        try box.write("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", to: notACertificate)
        try box.service("web-2fa", world.arguments(validator.url, caFile: notACertificate), stateDirectory: world.hostState)
        let badCA = try doctor(box)
        #expect(badCA.lines.contains { $0.hasPrefix("error") && $0.contains("ca_file \(notACertificate) holds no PEM certificate") }, "\(badCA)")

        // The validator is down: the health call fails within its bound and says what to check.
        try world.service("web-2fa", validator)
        _ = try validator.stop()
        let started = Date()
        let down = try doctor(box)
        #expect(Date().timeIntervalSince(started) < 10, "the health call is bounded")
        #expect(down.status == 78, "\(down)")
        #expect(down.lines.contains { $0.hasPrefix("error") && $0.contains("did not answer /v1/health") && $0.contains("systemctl status securotpd") }, "\(down)")
    }

    @Test("sshd behind common-auth: the earlier sshd_config line that overrides a later one is named, Include files too")
    func sshdFirstValueWins() throws {
        let box = try Sandbox()
        _ = try box.enroll("root")
        // As pam-auth-update sets it up: the module in common-auth, sshd includes it.
        try box.write("auth required pam_unix.so\nauth required \(box.module) state_dir=\(box.state) nullok\n", to: box.pamDirectory + "/common-auth")
        try box.write("# PAM configuration for the Secure Shell service\n@include common-auth\naccount required pam_unix.so\n", to: box.pamDirectory + "/sshd")

        let included = box.path("sshd_config.d")
        try #require(mkdir(included, 0o755) == 0)
        try box.write("AuthenticationMethods publickey\n", to: included + "/50-cloud.conf")
        let sshdConfig = box.path("sshd_config")
        // Debian's file says `KbdInteractiveAuthentication no` early; the README's block was appended.
        let debian = "Include \(included)/*.conf\nUsePAM yes\nKbdInteractiveAuthentication no\n\n# securotp\n"
        try box.write(debian + "KbdInteractiveAuthentication yes\nAuthenticationMethods publickey,keyboard-interactive\n", to: sshdConfig)

        let result = try doctor(box, sshdConfig: sshdConfig)
        #expect(result.status == 78, "\(result)")
        #expect(result.lines.contains { $0.hasPrefix("ok") && $0.contains("service sshd (via common-auth)") }, "\(result)")
        let kbd = result.lines.filter { $0.hasPrefix("error") && $0.contains("KbdInteractiveAuthentication") }
        #expect(kbd.count == 1 && kbd.first?.hasPrefix("error    \(sshdConfig):3:") == true && kbd.first?.contains("\(sshdConfig):6") == true
            && kbd.first?.contains("first value") == true && kbd.first?.contains("sshd -t") == true, "\(result)")
        let methods = result.lines.filter { $0.hasPrefix("error") && $0.contains("AuthenticationMethods") }
        #expect(methods.count == 1 && methods.first?.contains("\(included)/50-cloud.conf:1") == true
            && methods.first?.contains("\(sshdConfig):7") == true, "\(result)")

        // Fixed where doctor said: no more findings about sshd.
        #expect(unlink(included + "/50-cloud.conf") == 0)
        try box.write(debian.replacingOccurrences(of: "KbdInteractiveAuthentication no", with: "KbdInteractiveAuthentication yes")
                      + "KbdInteractiveAuthentication yes\nAuthenticationMethods publickey,keyboard-interactive\n", to: sshdConfig)
        let fixed = try doctor(box, sshdConfig: sshdConfig)
        #expect(fixed.status == 0, "\(fixed)")
        #expect(fixed.lines.contains { $0.hasPrefix("ok") && $0.contains("\(sshdConfig):7: AuthenticationMethods publickey,keyboard-interactive") }, "\(fixed)")

        // Without sshd's stack reaching the module, its configuration is not doctor's business.
        try box.write("@include common-password\n", to: box.pamDirectory + "/sshd")
        #expect(try !doctor(box, sshdConfig: sshdConfig).lines.contains { $0.contains("AuthenticationMethods") })
    }

    /// The users a "will be refused" warning names.
    private func refused(_ result: ProcessResult) -> [String]? {
        guard let line = result.lines.first(where: { $0.hasPrefix("warning") && $0.contains("will be refused: ") }),
              let start = line.range(of: "will be refused: "), let end = line.range(of: " — enroll") else { return nil }
        return line[start.upperBound..<end.lowerBound].components(separatedBy: ", ")
    }

    @Test("Stacks without nullok: users who can log in without a token are listed as refused; nullok and groups= are honoured")
    func refusedUsersWithoutNullok() throws {
        let box = try Sandbox()
        _ = try box.enroll("daemon") // a store, but no token for root (whose shell is a login shell)
        try box.service("login-2fa")
        let withoutRoot = try doctor(box)
        let names = try #require(refused(withoutRoot), "\(withoutRoot)")
        #expect(names.contains("root") && !names.contains("daemon"), "\(withoutRoot)")
        #expect(withoutRoot.lines.contains { $0.contains("\(box.pamDirectory)/login-2fa:1: no nullok") }, "\(withoutRoot)")

        try box.service("login-2fa", ["groups=!root"])
        #expect(try refused(doctor(box))?.contains("root") != true, "root is outside groups=!root, so never asked")

        try box.service("login-2fa", ["nullok"])
        #expect(try refused(doctor(box)) == nil, "with nullok nobody is refused for lack of a token")

        _ = try box.enroll("root")
        try box.service("login-2fa")
        #expect(try refused(doctor(box))?.contains("root") != true)
    }
}
