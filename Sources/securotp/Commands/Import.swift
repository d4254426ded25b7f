import ArgumentParser
import Foundation
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import tokens an issuer already made: otpauth URIs, Google Authenticator exports, PSKC, RSA SecurID .sdtid and CTF.",
        discussion: """
        SOURCE is a file, - for standard input, or the token string itself (an otpauth:// URI or a CTF string). The format is detected. Everything in SOURCE is imported or nothing is: a bad checksum, a wrong password, a token bound to another device or an expired token stops the whole import with a message naming it.

        Device-bound SecurID tokens must be bound to this host's binding ID for the user (securotp binding-id USER).

        Examples:
          securotp import alice /root/alice.sdtid --password-file /root/pw
          securotp import bob 'otpauth://totp/ACME:bob?secret=JBSWY3DPEHPK3PXP&issuer=ACME'
          securotp import carol vendor.pskc --key-file /root/transport.key --format json
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The Unix user who will log in with the tokens.", transform: CommandContext.canonical)
    var user: String

    @Argument(help: "File, - for standard input, or the token string.")
    var source: String

    @Option(help: "Token or container password (SDTID, CTF, PSKC PBKDF2). Prefer --password-file: arguments are visible to other users.")
    var password: String?

    @Option(name: .customLong("password-file"), help: ArgumentHelp("Read the password from the first line of FILE.", valueName: "FILE"))
    var passwordFile: String?

    @Option(help: ArgumentHelp("Pre-shared PSKC transport key, hex.", valueName: "HEX"))
    var key: String?

    @Option(name: .customLong("key-file"), help: ArgumentHelp("Read the PSKC transport key (hex) from FILE.", valueName: "FILE"))
    var keyFile: String?

    @Option(help: "Nickname for the imported tokens (≤ 32 characters; default: the account name in the source).")
    var nickname: String?

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func validate() throws {
        if password != nil && passwordFile != nil { throw ValidationError("give --password or --password-file, not both") }
        if key != nil && keyFile != nil { throw ValidationError("give --key or --key-file, not both") }
    }

    func run() async throws {
        let context = try CommandContext(global)
        try Store.validate(user: user)
        let request = ImportRequest(source: Data(try readSource()).base64EncodedString(), password: try readPassword(),
                                    keyHex: try readKey(), nickname: nickname)
        let imported: TokenList
        do {
            imported = try await context.withService(create: true) { service in
                try await service.importTokens(user: user, request, caller: context.caller)
            }
        } catch let error as ServiceError where error.code == .importInvalid || error.code == .importDenied {
            throw ServiceError(error.code, "\(source): \(error.message)")
        }
        let tokens = imported.tokens
        switch format {
        case .json:
            print(JSONValue.array(tokens.map(Formatting.json)).rendered)
        case .text:
            print("Imported \(tokens.count) token\(tokens.count == 1 ? "" : "s") for \(user):")
            print(Formatting.table(["SERIAL", "KIND", "DIGITS", "PERIOD", "PIN", "EXPIRES", "FROM"], tokens.map { token in
                [token.serial, token.kind, String(token.digits), Formatting.period(token), Formatting.pin(token),
                 token.expires > 0 ? Formatting.time(token.expires) : "never", token.source]
            }))
            if tokens.contains(where: \.needsNewPIN) {
                print("\nTokens with a PIN mode and no PIN yet ask for a new PIN at the first login (or: securotp pin set \(user) SERIAL).")
            }
        }
    }

    private func readSource() throws -> [UInt8] {
        if source == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        if FileManager.default.fileExists(atPath: source) {
            guard let data = FileManager.default.contents(atPath: source) else {
                throw CLIError(message: "cannot read \(source)", exitCode: 66)
            }
            return Array(data)
        }
        if source.contains("://") || source.allSatisfy({ $0.isNumber || $0 == "-" }) || source.count > 100 {
            return Array(source.utf8)
        }
        throw CLIError(message: "\(source): no such file (give a file, - for standard input, or the token string)", exitCode: 66)
    }

    private func readPassword() throws -> String? {
        if let password { return password }
        guard let passwordFile else { return nil }
        guard let data = FileManager.default.contents(atPath: passwordFile) else { throw CLIError(message: "cannot read \(passwordFile)", exitCode: 66) }
        return String(decoding: data.prefix { $0 != 10 && $0 != 13 }, as: UTF8.self)
    }

    private func readKey() throws -> String? {
        if let key { return key }
        guard let keyFile else { return nil }
        guard let data = FileManager.default.contents(atPath: keyFile) else { throw CLIError(message: "cannot read \(keyFile)", exitCode: 66) }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
