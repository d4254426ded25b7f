import ArgumentParser
import Glibc
import SecurOTPAuthenticator
import SecurOTPCore
import SecurOTPImport
import SecurOTPCommandLine

/// `securotp-authenticator`: the user's software token. The root declares the command tree
/// only; each subcommand lives in Commands/ and works against a `Context` (store, clock, I/O).
@main
struct AuthenticatorCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "securotp-authenticator",
        abstract: "A software token on this machine: keeps your tokens sealed in your home and shows their codes.",
        discussion: """
        Your tokens live in $XDG_DATA_HOME/securotp (default ~/.local/share/securotp): a directory only you can open, with the seeds sealed under a key made from a random key file, this machine's ID and your uid. A copy of the directory does not open for another user or on another machine. --data-dir DIR (or SECUROTP_AUTHENTICATOR_DIR) uses another directory.

        Typical first steps:
          securotp-authenticator binding-id        # give it to an issuer that binds SecurID tokens to you
          securotp-authenticator import 'otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP&issuer=ACME'
          securotp-authenticator code              # the code to type now, the next one, seconds left
          securotp-authenticator list

        Errors are one line on standard error, with a sysexits(3) status: 64 usage, 65 bad data, 66 missing file or store, 67 no such token, 71 system error, 74 database I/O, 77 permissions, wrong password, or a store or token made for another user or machine.
        """,
        version: SecurOTPVersion.string,
        subcommands: [Import.self, List.self, Code.self, Nickname.self, Delete.self, Reset.self,
                      BindingIDCommand.self, Activate.self, Pending.self, Approve.self, Respond.self, Deny.self, Watch.self,
                      Unlock.self, Remove.self, FidoCommand.self, VersionCommand.self]
    )

    static func main() {
        do {
            var command = try parseAsRoot(hoistingDataDirectory(Array(CommandLine.arguments.dropFirst())))
            try command.run()
        } catch let error as AuthenticatorError {
            Context.fail(error.cliCode, error.message)
        } catch let error as ImportError {
            Context.fail(error.cliCode, error.message)
        } catch let error as CLIError {
            Context.fail(error.code, error.message)
        } catch {
            // --help and --version exit 0 through ArgumentParser; every usage error is one line.
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }
            Context.fail(CLIErrorCode(parserExit: code.rawValue), "\(message(for: error)) (see securotp-authenticator --help)")
        }
    }
}

/// `securotp-authenticator --data-dir DIR code` reads best with the option first, but
/// ArgumentParser gives options only to the subcommand that declares them: move it after it.
func hoistingDataDirectory(_ arguments: [String]) -> [String] {
    var globals: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        if argument == "--data-dir", index + 1 < arguments.count {
            globals += [argument, arguments[index + 1]]
            index += 2
        } else if argument.hasPrefix("--data-dir=") {
            globals.append(argument)
            index += 1
        } else {
            break
        }
    }
    guard !globals.isEmpty, index < arguments.count else { return arguments }
    return [arguments[index]] + globals + arguments[(index + 1)...]
}

/// A failure the CLI reports as one line with its code (docs/errors.md), whose sysexits(3)
/// status lets scripts tell bad input from a store that is not theirs.
extension AuthenticatorError {
    var cliCode: CLIErrorCode {
        switch code {
        case .invalidInput: .invalidInput
        case .corrupt: .corrupt
        case .missing: .missing
        case .notFound: .notFound      // no such token (as in securotp)
        case .system: .system
        case .unavailable: .unavailable // the validator cannot be reached
        case .refused: .refused         // credential, activation or unlock code refused
        case .database: .database
        case .permissions: .permissions
        case .otherDevice: .otherDevice
        }
    }
    var exitCode: Int32 { cliCode.exitStatus }
}

extension ImportError {
    /// A wrong password or a token bound to another device is a permission matter, like in securotp.
    var cliCode: CLIErrorCode {
        switch code {
        case .password: .importPassword
        case .deviceBinding: .importDeviceBinding
        case .unrecognized, .malformed, .checksum, .expired, .unsupported, .tooLarge: .importInvalid
        }
    }
    var exitCode: Int32 { cliCode.exitStatus }
}
