import Foundation
import Testing

/// The real OpenSSH server on loopback, keyboard-interactive, its PAM stack holding only
/// pam_securotp: `ssh` (answered by sshpass) must get in with the current HOTP code and be
/// refused with the same code again and with a wrong one.
///
/// sshd names its PAM service after its own program name, so a uniquely named symlink to
/// /usr/sbin/sshd gets its own /etc/pam.d file (removed afterwards). Needs root, sshd and sshpass
/// (Debian: openssh-server, sshpass; make test installs them).
@Suite("Real sshd: keyboard-interactive through pam_securotp", .enabled(if: geteuid() == 0, "needs root to run sshd"))
struct SSHDTests {
    @Test("ssh logs in with the code once; replayed and wrong codes are refused")
    func keyboardInteractiveLogin() throws {
        let sshd = try Tools.require("/usr/sbin/sshd", package: "openssh-server")
        let sshpass = try Tools.require("/usr/bin/sshpass", package: "sshpass")
        let ssh = try Tools.require("/usr/bin/ssh", package: "openssh-client")
        let keygen = try Tools.require("/usr/bin/ssh-keygen", package: "openssh-client")

        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = "securotp-it-sshd-\(UInt32.random(in: 100_000...999_999))"
        let pamFile = "/etc/pam.d/" + service
        try box.write("""
            auth required \(box.module) state_dir=\(box.state)
            account required pam_permit.so
            session required pam_permit.so

            """, to: pamFile)
        defer { unlink(pamFile) }

        let hostKey = box.path("host_ed25519")
        let keyResult = try Run.run(keygen, ["-q", "-t", "ed25519", "-N", "", "-f", hostKey])
        #expect(keyResult.status == 0, "\(keyResult)")
        mkdir("/run/sshd", 0o755) // privilege separation directory, normally made by systemd
        // Below the kernel's ephemeral ports (32768–60999), which other tests' clients and port-0
        // listeners take at random.
        let port = Int.random(in: 20_000...32_000)
        let config = box.path("sshd_config")
        try box.write("""
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(hostKey)
            PidFile \(box.path("sshd.pid"))
            UsePAM yes
            KbdInteractiveAuthentication yes
            PasswordAuthentication no
            PubkeyAuthentication no
            AuthenticationMethods keyboard-interactive
            PermitRootLogin yes
            StrictModes no
            LogLevel VERBOSE

            """, to: config)
        let program = box.path(service)
        try FileManager.default.createSymbolicLink(atPath: program, withDestinationPath: sshd)
        let server = try Run.start(program, ["-D", "-e", "-f", config])
        defer { kill(server.pid, SIGTERM); _ = try? server.wait(timeout: 10) }
        try Self.waitForListener(port: port, server: server)

        func login(_ code: String) throws -> ProcessResult {
            try Run.run(sshpass, ["-P", "Verification code", "-p", code, ssh, "-p", String(port),
                                  "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                                  "-o", "PreferredAuthentications=keyboard-interactive", "-o", "PubkeyAuthentication=no",
                                  "-o", "NumberOfPasswordPrompts=1", "-o", "ConnectTimeout=10",
                                  "root@127.0.0.1", "echo", "securotp-ssh-ok"])
        }

        let code = try Oath.hotp(token.secret, counter: 0)
        let first = try login(code)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains("securotp-ssh-ok"), "\(first)")

        let replay = try login(code)
        #expect(replay.status != 0, "a replayed code logged in over ssh:\n\(replay)")
        #expect((replay.stdout + replay.stderr).contains(PAM.replayInfo), "ssh did not show why:\n\(replay)")
        #expect(!replay.stdout.contains("securotp-ssh-ok"))

        let wrong = try Oath.wrongHOTP(token.secret)
        let refused = try login(wrong)
        #expect(refused.status != 0, "a wrong code logged in over ssh:\n\(refused)")
        // sshd passes the module's message on as the keyboard-interactive instruction of a
        // last round, which ssh prints before giving up.
        #expect((refused.stdout + refused.stderr).contains(RefusalMessageTests.refused), "ssh did not show why:\n\(refused)")

        let next = try login(try Oath.hotp(token.secret, counter: 1))
        #expect(next.status == 0 && next.stdout.contains("securotp-ssh-ok"), "\(next)")
    }

    /// Until sshd accepts connections on 127.0.0.1:`port` (also used by PushSSHDTests).
    static func waitForListener(port: Int, server: Child) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(fd)
            if connected == 0 { return }
            if kill(server.pid, 0) != 0 { break }
            usleep(50_000)
        }
        throw HarnessError("sshd did not listen on 127.0.0.1:\(port):\n\((try? server.wait(timeout: 1)).map { "\($0)" } ?? "")")
    }
}
