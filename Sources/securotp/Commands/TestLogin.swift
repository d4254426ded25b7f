import ArgumentParser
import CPAMClient
import Glibc
import SecurOTPCommandLine
import SecurOTPStore

/// `securotp test USER [--service NAME]`: one real login through a PAM service's stack (the
/// same /etc/pam.d file, modules and prompts sudo, su, login or sshd would run), answered at
/// this terminal — the "test it before you log out" step after enrolling or changing a stack.
struct TestLogin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Log USER in through a real PAM stack, answering the prompts here.",
        discussion: """
        Runs pam_authenticate and the account check of /etc/pam.d/SERVICE (default sudo) for \
        USER, as that program would, with this terminal for the prompts (password, then the \
        verification code). Exits 0 when the stack lets USER in, 1 when it refuses. Nothing is \
        changed except what a login changes (the code is used up; a wrong code counts as a \
        failure). Why a refusal happened is in the system log (authpriv), as for a real login.

          securotp test alice                   # /etc/pam.d/sudo
          securotp test alice --service sshd    # the stack sshd's keyboard-interactive runs
        """)

    @Argument(help: "The user to log in.")
    var user: String

    @Option(help: ArgumentHelp("The PAM service: a file in /etc/pam.d.", valueName: "NAME"))
    var service = "sudo"

    func validate() throws {
        guard !service.isEmpty, !service.contains("/"), service != ".", service != ".." else {
            throw ValidationError("--service takes the name of a file in /etc/pam.d, not a path")
        }
    }

    func run() async throws { try await run(in: CommandContext(settings: Settings())) }

    /// `context`: where the lines go (the stack itself talks to this terminal, as a login would).
    func run(in context: CommandContext) async throws {
        guard geteuid() == 0 else {
            throw CLIError(.notRoot, "test runs a PAM stack as the programs do and must run as root")
        }
        guard CommandContext.userExists(user) else {
            throw CLIError(.noSuchSystemUser, "no such user: \(user) (NSS does not know it)")
        }
        if access("/etc/pam.d/\(service)", F_OK) != 0 {
            CommandContext.warn("/etc/pam.d/\(service) does not exist: PAM runs /etc/pam.d/other instead (on Debian it refuses everyone)")
        }
        context.print("Testing \(user) through /etc/pam.d/\(service):")
        var stage: Int32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let result = securotp_pam_test(service, user, &stage, &message, UInt(message.count))
        let reason = String(cString: message)
        if result == PAM_SUCCESS {
            context.print("\(service): \(user) would be let in (authentication and account check passed)")
            return
        }
        let step = stage == 0 ? "starting PAM" : (stage == 1 ? "authentication" : "account check")
        standardError("securotp: \(service): \(user) would be refused: \(step) failed: \(reason) (PAM code \(result)); the system log (authpriv) says why\n")
        throw ExitCode(1)
    }
}
