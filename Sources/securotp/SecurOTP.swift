import ArgumentParser
import Glibc
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import SecurOTPCommandLine

/// `securotp`: the admin CLI. The root declares the command tree only; each subcommand lives
/// in Commands/ and works against a `CommandContext` (store, settings, output).
@main
struct SecurOTP: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "securotp",
        abstract: "Provision and manage second-factor tokens for pam_securotp.",
        discussion: """
        Runs as root against the local token store (/var/lib/securotp/securotp.db, key in /etc/securotp/securotp.key, settings in /etc/securotp/securotp.conf). --state-dir DIR (or SECUROTP_STATE_DIR) keeps all three in DIR instead, for tests and demos; the PAM module takes the same directory as state_dir=DIR.

        With --server URL --credential FILE (or SECUROTP_SERVER, SECUROTP_CREDENTIAL, SECUROTP_CA_FILE) every command runs on a securotpd validator instead, with the same output.

        Typical first steps:
          securotp init                    # the store and its key (packages do this)
          securotp enroll alice            # TOTP token, QR code for the phone
          securotp test alice              # log alice in through /etc/pam.d/sudo, here
          securotp doctor                  # check config, permissions and PAM stacks
          securotp list alice
          securotp --server https://otp.example.com:8443 --credential /root/admin.cred list
        """,
        version: SecurOTPVersion.string,
        subcommands: [Enroll.self, Import.self, ImportBatch.self, List.self, Nickname.self, Delete.self, Reset.self,
                      PIN.self, Resync.self, RecoveryCodesCommand.self,
                      BindingIDCommand.self, Unlock.self, Status.self, Doctor.self, Init.self, KeyCommand.self, TestLogin.self,
                      HostCommand.self, AdminCommand.self, DeviceCommand.self, FidoCommand.self, Policy.self, Audit.self]
    )

    /// Store, service and config errors end as one line on stderr and a sysexits code, never a trace.
    static func main() async {
        do {
            var command = try parseAsRoot(hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst())))
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch let error as ServiceError {
            CommandContext.fail(error.cliCode, error.message)
        } catch let error as StoreError {
            CommandContext.fail(ServiceError(error).cliCode, error.message)
        } catch let error as CLIError {
            CommandContext.fail(error.code, error.message)
        } catch let code as ExitCode where code != .success {
            // The command already said why (doctor's report, import-batch's failed lines).
            Glibc.exit(code.rawValue)
        } catch {
            // --help and --version exit 0 through ArgumentParser; every usage error is one line.
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }
            CommandContext.fail(CLIErrorCode(parserExit: code.rawValue), "\(message(for: error)) (see securotp --help)")
        }
    }
}

/// `securotp --state-dir DIR enroll alice` reads best with global options first, but
/// ArgumentParser only gives them to the subcommand that declares them: move them after it.
func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
    let globalsWithValue = GlobalOptions.namesWithValue
    var globals: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        let name = String(argument.prefix { $0 != "=" })
        guard globalsWithValue.contains(name) else { break }
        globals.append(argument)
        if !argument.contains("="), index + 1 < arguments.count {
            globals.append(arguments[index + 1])
            index += 1
        }
        index += 1
    }
    guard !globals.isEmpty, index < arguments.count else { return arguments }
    let subcommands = SecurOTP.configuration.subcommands
    guard let command = subcommands.first(where: { $0._commandName == arguments[index] }) else {
        CommandContext.fail(.usage, "unknown command '\(arguments[index])'; commands: \(subcommands.map { $0._commandName }.joined(separator: ", "))")
    }
    // A command group (`pin set`) takes the options after its own subcommand.
    var words = 1
    let nested = command.configuration.subcommands.map { $0._commandName }
    if !nested.isEmpty, index + 1 < arguments.count, nested.contains(arguments[index + 1]) { words = 2 }
    return Array(arguments[index..<(index + words)]) + globals + arguments[(index + words)...]
}
