import ArgumentParser
import Foundation
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import SecurOTPCommandLine

struct Import: ContextCommand {
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
          securotp import dave "$(pamu2fcfg -u dave)"    # a FIDO security key (pam_u2f line)
          securotp import dave --origin pam://web1 "$(pamu2fcfg -o pam://web1 -u dave)"   # made for another origin
          securotp import dave /etc/u2f_mappings          # dave's line of a pam_u2f mapping file
          securotp import --all /etc/u2f_mappings         # every user's line: all of them or none
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The Unix user who will log in with the tokens (not with --all).", transform: CommandContext.canonical)
    var user: String?

    @Argument(help: "File, - for standard input, or the token string (not with --all).")
    var source: String?

    @Option(name: .customLong("all"), help: ArgumentHelp(
        "Import every user's FIDO credentials from a pam_u2f mapping file (each user's last line, as pam_u2f reads it), in one transaction: all or none.",
        valueName: "FILE"))
    var allFrom: String?

    @Option(help: ArgumentHelp(
        "pam_u2f lines and mapping files: the origin the credentials were made for (pamu2fcfg -o; also the app ID of old KH,PK credentials). Default: origin= in securotp.conf, else pam://HOSTNAME. The module accepts a credential only for its own origin.",
        valueName: "ORIGIN"))
    var origin: String?

    @OptionGroup var options: ImportCommandOptions

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func validate() throws {
        if let origin, !FidoSettings.validOrigin(origin) {
            throw ValidationError("--origin: not an origin (printable ASCII without spaces or commas, at most 255 bytes, e.g. pam://host)")
        }
        if allFrom != nil {
            guard user == nil, source == nil else { throw ValidationError("--all FILE takes no USER or SOURCE: every user in FILE is imported") }
        } else {
            guard user != nil, source != nil else { throw ValidationError("give USER and SOURCE (or --all FILE for a whole pam_u2f mapping file)") }
        }
    }

    func run(in context: CommandContext) async throws {
        if let allFrom { return try FidoImport.runAll(mappingFile: allFrom, origin: origin, format: format, context: context) }
        guard let user, let source else { throw CLIError.usage("give USER and SOURCE") }
        try Store.validate(user: user)
        if FidoImport.looksLikeU2FLine(source) { // pamu2fcfg's output (Fido.swift)
            return try await FidoImport.run(user: user, line: source, origin: origin, format: format, context: context)
        }
        let input = try ImportInput.source(source)
        if FidoImport.looksLikeMappingFile(input) { // a pam_u2f mapping file (Fido.swift)
            return try await FidoImport.run(user: user, mappingFile: input, path: source, origin: origin, format: format, context: context)
        }
        guard origin == nil else {
            throw CLIError.usage("--origin is for pam_u2f lines and mapping files; \(TerminalText.escaped(source)) is neither")
        }
        let password = try options.readPassword().map { String(decoding: $0, as: UTF8.self) }
        let keyHex = try options.readTransportKey().map { key in key.withUnsafeBytes { Hex.encode($0) } }
        let request = ImportRequest(source: Data(input).base64EncodedString(), password: password,
                                    keyHex: keyHex, nickname: options.nickname)
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
            context.print(JSONOutput.array(tokens.map(Formatting.json)).rendered)
        case .text:
            context.print("Imported \(tokens.count) token\(tokens.count == 1 ? "" : "s") for \(user):")
            context.print(Formatting.table(["SERIAL", "KIND", "DIGITS", "PERIOD", "PIN", "EXPIRES", "FROM"], tokens.map { token in
                [token.serial, token.kind, String(token.digits), Formatting.period(token), Formatting.pin(token),
                 token.expires > 0 ? Formatting.time(token.expires) : "never", token.source]
            }))
            if tokens.contains(where: \.needsNewPIN) {
                context.print("\nTokens with a PIN mode and no PIN yet ask for a new PIN at the first login (or: securotp pin set \(user) SERIAL).")
            }
        }
    }
}
