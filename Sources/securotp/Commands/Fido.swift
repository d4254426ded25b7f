import ArgumentParser
import CFido2
import Foundation
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPStore

/// `securotp fido enroll|export`: FIDO2/U2F security keys in the local store (docs/fido.md).
struct FidoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fido",
        abstract: "FIDO2/U2F security keys: enroll one attached here, export pam_u2f lines.",
        discussion: """
        A user whose tokens include a FIDO credential logs in by touching the key. Credentials made by pamu2fcfg are imported with: securotp import USER 'LINE' (docs/fido.md).
        """,
        subcommands: [FidoEnroll.self, FidoExport.self]
    )
}

/// FIDO credentials live in the local SQLite store only.
extension CommandContext {
    func openFidoStore() throws -> Store {
        guard case .local = target else {
            throw CLIError(.localStoreOnly, "FIDO credentials are kept in the local store only; run this on the host without --server or --database")
        }
        return try Store.open(settings.paths, .create)
    }
}

enum FidoOutput {
    static func json(_ credential: FidoCredential, user: String) -> JSONValue {
        .object([
            ("serial", .string(credential.serial)),
            ("user", .string(user)),
            ("kind", .string("fido")),
            ("type", .string(credential.type.rawValue)),
            ("origin", .string(credential.origin)),
            ("attributes", .string(credential.attributes)),
            ("counter", .number(Int64(credential.counter))),
            ("state", .string(credential.cloned ? "cloned" : "active")),
            ("source", .string(credential.source)),
            ("line", .string(FidoCredential.u2fLine(user: user, [credential]))),
        ])
    }
}

struct FidoEnroll: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll",
        abstract: "Make a credential on the security key attached to this machine and enroll it for USER.",
        discussion: """
        Touch the key when it blinks. The credential is made for ORIGIN (default: origin= in securotp.conf, else pam://HOSTNAME, as pamu2fcfg does), which the PAM module's origin must match.

        Examples:
          securotp fido enroll alice
          securotp fido enroll bob --pin --format json
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The Unix user who will log in with the key.", transform: CommandContext.canonical) var user: String
    @Option(help: "es256 (default) or eddsa (Ed25519).") var type: String = "es256"
    @Option(help: "The RP ID (default: pam://HOSTNAME).") var origin: String?
    @Flag(help: "Ask the key's PIN now and at every login (+pin).") var pin = false
    @Flag(help: "Ask the key to verify the user (built-in UV) at every login (+verification).") var uv = false
    @Flag(name: .customLong("no-presence"), help: "Do not require a touch at login (pam_u2f's -P).") var noPresence = false
    @Option(help: "text or json.") var format: OutputFormat = .text

    // The work is synchronous and kept out of the async run(in:): inside it, this body crashes
    // the release compiler's coroutine splitting (Swift 6.3.1, signal 11 in CoroSplit).
    func run(in context: CommandContext) async throws { try enroll(in: context) }

    @inline(never)
    private func enroll(in context: CommandContext) throws {
        try Store.validate(user: user)
        guard let keyType = FidoCredential.KeyType(rawValue: type), keyType != .rs256 else {
            throw CLIError.usage("--type \(TerminalText.quoted(type)): es256 or eddsa (rs256 credentials are not verified by this version)")
        }
        let coseAlgorithm: Int32 = keyType == .eddsa ? -8 : -7
        var fido = context.settings.fido
        if let origin {
            guard FidoSettings.validOrigin(origin) else { throw CLIError.usage("--origin \(TerminalText.quoted(origin)) is not a usable RP ID") }
            fido.origin = origin
        }
        let rpID = fido.effectiveOrigin
        let store = try context.openFidoStore()
        let pinText = pin ? try context.secretLine("PIN of the security key: ", "PIN") : nil
        guard let challenge = SecretBytes.random(count: 32), let userID = SecretBytes.random(count: 32) else {
            throw CLIError(.system, "no randomness available")
        }
        var made = securotp_fido_credential()
        var error = [CChar](repeating: 0, count: Int(SECUROTP_FIDO_ERROR))
        let pinString = pinText.map { String(decoding: $0, as: UTF8.self) }
        let result = challenge.withUnsafeBytes { cdh in
            userID.withUnsafeBytes { id in
                rpID.withCString { rp in
                    user.withCString { name in
                        withOptionalCString(pinString) { pinPointer in
                            var request = securotp_fido_credential_request(
                                rp_id: rp, user_name: name, user_id: id.baseAddress, user_id_length: id.count,
                                client_data_hash: cdh.baseAddress, cose_algorithm: coseAlgorithm, resident: 0,
                                uv: Int32(uv ? SECUROTP_FIDO_TRUE : SECUROTP_FIDO_OMIT), pin: pinPointer)
                            return securotp_fido_make_credential(&request, 60_000, &made, &error)
                        }
                    }
                }
            }
        }
        let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch Int(result) {
        case Int(SECUROTP_FIDO_OK): break
        case Int(SECUROTP_FIDO_PIN_REQUIRED):
            throw CLIError(.fidoPINRequired, "the security key has a PIN: run again with --pin (\(message))")
        case Int(SECUROTP_FIDO_DENIED):
            throw CLIError(.fidoNotTouched, "the security key was not touched; nothing enrolled (\(message))")
        case Int(SECUROTP_FIDO_UNAVAILABLE), Int(SECUROTP_FIDO_NO_DEVICE):
            throw CLIError(.unavailable, "\(message); attach a security key (libfido2-1 must be installed)")
        default:
            throw CLIError(.fidoKeyFailed, "security key: \(message)")
        }
        let handleLength = made.credential_id_length, keyLength = made.public_key_length
        let handle = withUnsafeBytes(of: &made.credential_id) { Array($0.prefix(min(handleLength, $0.count))) }
        let key = withUnsafeBytes(of: &made.public_key) { Array($0.prefix(min(keyLength, $0.count))) }
        let credential = FidoCredential(keyHandle: handle, publicKey: key, type: keyType, presence: !noPresence, verification: uv,
                                        pin: pin, origin: rpID)
        let added = try store.addFido([credential], user: user, source: "enroll", maxTokens: context.settings.maxTokens,
                                      now: context.now())
        switch format {
        case .json: context.print(FidoOutput.json(added[0], user: user).rendered)
        case .text:
            context.print("Enrolled FIDO credential \(added[0].serial) for \(user) (\(credential.type.rawValue), origin \(rpID)).")
            context.print("pam_u2f line: \(FidoCredential.u2fLine(user: user, added))")
        }
    }
}

struct FidoExport: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print USER's FIDO credentials as one pam_u2f authfile line (u2f_keys).",
        discussion: "Credentials marked cloned are left out. Example: securotp fido export alice >> /etc/u2f_mappings"
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The credentials' owner.", transform: CommandContext.canonical) var user: String
    @Option(help: "text (the pam_u2f line) or json.") var format: OutputFormat = .text

    func run(in context: CommandContext) async throws {
        try Store.validate(user: user)
        let store = try context.openFidoStore()
        let credentials = try store.fidoCredentials(user: user)
        switch format {
        case .json: context.print(JSONValue.array(credentials.map { FidoOutput.json($0, user: user) }).rendered)
        case .text:
            let active = credentials.filter { !$0.cloned }
            guard !active.isEmpty else {
                throw CLIError(.fidoNoCredential, "\(user) has no usable FIDO credential; enroll one with: securotp fido enroll \(user)")
            }
            context.print(FidoCredential.u2fLine(user: user, active))
        }
    }
}

/// `securotp import USER 'LINE'` with a pam_u2f line (pamu2fcfg's output).
enum FidoImport {
    /// A pam_u2f line or pamu2fcfg -n output, not a file, URI or CTF string.
    static func looksLikeU2FLine(_ source: String) -> Bool {
        guard !source.hasPrefix("/"), !source.hasPrefix("otpauth"), source != "-", source.contains(":"), source.contains(",") else { return false }
        return !FileManager.default.fileExists(atPath: source)
    }

    /// A pam_u2f mapping file (u2f_keys, u2f_mappings): UTF-8 whose every line, besides blank
    /// lines and `#` comments, is `user:KH,...`; not an otpauth list, XML or a CTF string.
    static func looksLikeMappingFile(_ bytes: [UInt8]) -> Bool {
        guard let text = String(validating: bytes, as: UTF8.self), !text.hasPrefix("<"), !text.contains("otpauth") else { return false }
        let lines = U2FMappingFile.lines(text, origin: "", appID: "")
        return !lines.isEmpty && lines.allSatisfy { !$0.user.isEmpty && !$0.user.contains("/") } && text.contains(",")
    }

    /// `securotp import USER FILE` with a pam_u2f mapping file: USER's line (the last one, as
    /// pam_u2f reads it), all its credentials or none; a credential that cannot be imported
    /// (resident, malformed) stops the import with the file, line and what to do.
    static func run(user: String, mappingFile bytes: [UInt8], path: String, format: OutputFormat, context: CommandContext) throws {
        let fido = context.settings.fido
        let text = String(decoding: bytes, as: UTF8.self)
        let shownPath = TerminalText.escaped(path)
        guard let line = U2FMappingFile.line(for: user, in: text, origin: fido.effectiveOrigin, appID: fido.effectiveAppID) else {
            throw CLIError(.invalidInput, "\(shownPath) has no line for \(user) (pam_u2f mapping file: user:KH,PK,type,attributes); nothing imported")
        }
        if let problem = line.problems.first {
            throw CLIError(.invalidInput, "\(shownPath):\(line.number): \(problem); nothing imported")
        }
        let store = try context.openFidoStore()
        let added = try store.addFido(line.credentials, user: user, source: "mapping-file", maxTokens: context.settings.maxTokens,
                                      now: context.now())
        report(added, user: user, from: "\(shownPath):\(line.number)", format: format, context: context)
    }

    private static func report(_ added: [FidoCredential], user: String, from: String, format: OutputFormat, context: CommandContext) {
        switch format {
        case .json: context.print(JSONValue.array(added.map { FidoOutput.json($0, user: user) }).rendered)
        case .text:
            let origins = Set(added.map(\.origin)).sorted().joined(separator: ", ")
            context.print("Imported \(added.count) FIDO credential\(added.count == 1 ? "" : "s") for \(user) from \(from) (origin \(origins)): \(added.map(\.serial).joined(separator: ", "))")
        }
    }

    static func run(user: String, line: String, format: OutputFormat, context: CommandContext) throws {
        let origin = context.settings.fido.effectiveOrigin
        let parsed = FidoCredential.parse(line: line, origin: origin, appID: context.settings.fido.effectiveAppID)
        guard parsed.problem.isEmpty else { throw CLIError(.invalidInput, "pam_u2f line: \(parsed.problem)") }
        guard parsed.user.isEmpty || parsed.user == user else {
            throw CLIError(.invalidInput, "the pam_u2f line is for \(TerminalText.quoted(parsed.user)), not \(user)")
        }
        let store = try context.openFidoStore()
        let added = try store.addFido(parsed.credentials, user: user, source: "pamu2fcfg", maxTokens: context.settings.maxTokens,
                                      now: context.now())
        report(added, user: user, from: "the pam_u2f line", format: format, context: context)
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
