import ArgumentParser
import Foundation
import SecurOTPCore
import SecurOTPImport
import SecurOTPStore

struct Import: ParsableCommand {
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

    func run() throws {
        let context = try CommandContext(global)
        try Store.validate(user: user)
        let input = try readSource()
        let store = try context.openStore(create: true)
        let now = CommandContext.now()
        let options = ImportOptions(password: try readPassword(), transportKey: try readKey(), bindingID: store.bindingID(user: user), now: now)
        let imported: [ImportedToken]
        do {
            imported = try TokenImporter.parse(input, options: options)
        } catch {
            throw CLIError(message: "\(source): \(error.message)", exitCode: error.code == .password || error.code == .deviceBinding ? 77 : 65)
        }
        guard !imported.isEmpty else { throw CLIError(message: "\(source): no tokens found", exitCode: 65) }
        let records = try store.add(imported.map(newToken), user: user, maxTokens: context.settings.maxTokens, now: now)
        switch format {
        case .json:
            print(JSONValue.array(records.map(Formatting.json)).rendered)
        case .text:
            print("Imported \(records.count) token\(records.count == 1 ? "" : "s") for \(user):")
            print(Formatting.table(["SERIAL", "KIND", "DIGITS", "PERIOD", "PIN", "EXPIRES", "FROM"], zip(records, imported).map { record, token in
                [record.serial, record.kind.rawValue, String(record.parameters.digits),
                 record.kind == .hotp ? "-" : "\(record.parameters.period)s", Formatting.pin(record),
                 record.expires > 0 ? Formatting.time(record.expires) : "never", token.source]
            }))
            if records.contains(where: \.needsNewPIN) {
                print("\nTokens with a PIN mode and no PIN yet ask for a new PIN at the first login (or: securotp pin set \(user) SERIAL).")
            }
        }
    }

    private func newToken(_ token: ImportedToken) -> NewToken {
        let label = nickname ?? String((token.account ?? "").prefix(32))
        switch token.kind {
        case .oath(let parameters):
            return NewToken(kind: parameters.kind == .hotp ? .hotp : .totp, parameters: parameters, seed: token.secret,
                            serial: token.serial, nickname: label, issuer: token.issuer ?? "", pinMode: token.pinMode,
                            expires: token.expires ?? 0, source: token.source)
        case .securID(let parameters):
            return NewToken(kind: .securid, parameters: OATHParameters(kind: .totp, digits: parameters.digits, period: parameters.interval),
                            seed: token.secret, serial: token.serial, nickname: label, issuer: token.issuer ?? "RSA SecurID",
                            pinMode: token.pinMode, expires: token.expires ?? parameters.expiresAt ?? 0, source: token.source)
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

    private func readPassword() throws -> [UInt8]? {
        if let password { return Array(password.utf8) }
        guard let passwordFile else { return nil }
        guard let data = FileManager.default.contents(atPath: passwordFile) else { throw CLIError(message: "cannot read \(passwordFile)", exitCode: 66) }
        return Array(data.prefix { $0 != 10 && $0 != 13 })
    }

    private func readKey() throws -> SecretBytes? {
        var text = key
        if let keyFile {
            guard let data = FileManager.default.contents(atPath: keyFile) else { throw CLIError(message: "cannot read \(keyFile)", exitCode: 66) }
            text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let text else { return nil }
        guard let bytes = Hex.decode(text), [16, 24, 32].contains(bytes.count) else {
            throw CLIError(message: "the transport key must be 16, 24 or 32 bytes of hex", exitCode: 65)
        }
        return SecretBytes(copying: bytes)
    }
}
