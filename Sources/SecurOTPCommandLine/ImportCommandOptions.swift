import ArgumentParser
import SecurOTPCore

/// The options of `import` that both CLIs take (`securotp import`, `securotp-authenticator
/// import`): the password and the PSKC transport key, each given directly or in a file, and the
/// nickname. One definition, so that their help and checks cannot drift apart; what each CLI
/// does with them stays in its command. (SecurOTPImport.ImportOptions is what the parsers are
/// given, not these.)
public struct ImportCommandOptions: ParsableArguments {
    @Option(help: "Token or container password (SDTID, CTF, PSKC PBKDF2). Prefer --password-file: arguments are visible to other users.")
    public var password: String?

    @Option(name: .customLong("password-file"), help: ArgumentHelp("Read the password from the first line of FILE.", valueName: "FILE"))
    public var passwordFile: String?

    @Option(help: ArgumentHelp("Pre-shared PSKC transport key, hex.", valueName: "HEX"))
    public var key: String?

    @Option(name: .customLong("key-file"), help: ArgumentHelp("Read the PSKC transport key (hex) from FILE.", valueName: "FILE"))
    public var keyFile: String?

    @Option(help: "Nickname for the imported tokens (at most 32 characters; default: the account name in the source).")
    public var nickname: String?

    public init() {}

    public func validate() throws {
        if password != nil && passwordFile != nil { throw ValidationError("give --password or --password-file, not both") }
        if key != nil && keyFile != nil { throw ValidationError("give --key or --key-file, not both") }
    }

    /// `--password` or the first line of `--password-file` (ImportInput.password).
    public func readPassword() throws -> [UInt8]? { try ImportInput.password(password, file: passwordFile) }

    /// `--key` or `--key-file`, checked (ImportInput.transportKey).
    public func readTransportKey() throws -> SecretBytes? { try ImportInput.transportKey(key, file: keyFile) }
}
