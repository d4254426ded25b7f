import ArgumentParser
import Foundation
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// `securotp fido enroll|export`: FIDO2/U2F security keys in the local store or a validator's (docs/fido.md).
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

/// FIDO credentials are kept in the local SQLite store, in PostgreSQL (`--database`) or a
/// validator's store (`--server`, docs/fido.md "Remote mode"); the last two through the service.
extension CommandContext {
    var fidoThroughService: Bool { if case .local = target { false } else { true } }

    /// The local SQLite store (`--all` imports every user in one of its transactions).
    func openFidoStore() throws -> Store {
        guard !fidoThroughService else {
            throw CLIError(.localStoreOnly, "this needs the local store; run it on the validator with --state-dir")
        }
        return try Store.open(settings.paths, .create)
    }

    func addFido(_ credentials: [FidoCredential], user: String, source: String) async throws -> [FidoCredential] {
        guard fidoThroughService else {
            return try openFidoStore().addFido(credentials, user: user, source: source, maxTokens: settings.maxTokens, now: now())
        }
        let request = FidoAddRequest(credentials: credentials.map { FidoAddRequest.Item(credential: $0.u2fField, origin: $0.origin) }, source: source)
        let added = try await withService { service in try await service.addFido(user: user, request, caller: caller) }
        return added.credentials.compactMap(\.parsed)
    }

    func fidoCredentials(user: String) async throws -> [FidoCredential] {
        guard fidoThroughService else { return try openFidoStore().fidoCredentials(user: user) }
        let list = try await withService { service in try await service.fidoCredentials(user: user, caller: caller) }
        return list.credentials.compactMap(\.parsed)
    }
}

enum FidoOutput {
    static func json(_ credential: FidoCredential, user: String) -> JSONOutput {
        .object([
            ("serial", .string(credential.serial)),
            ("user", .string(user)),
            ("kind", .string("fido")),
            ("type", .string(credential.type.rawValue)),
            ("origin", .string(credential.origin)),
            ("attributes", .string(credential.attributes)),
            ("resident", .bool(credential.resident)),
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
          securotp fido enroll carol --type rs256 --resident
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The Unix user who will log in with the key.", transform: CommandContext.canonical) var user: String
    @Option(help: "es256 (default), eddsa (Ed25519) or rs256 (RSA-2048, PKCS#1 v1.5).") var type: String = "es256"
    @Option(help: "The RP ID (default: pam://HOSTNAME).") var origin: String?
    @Flag(help: "Ask the key's PIN now and at every login (+pin).") var pin = false
    @Flag(help: "Ask the key to verify the user (built-in UV) at every login (+verification).") var uv = false
    @Flag(name: .customLong("no-presence"), help: "Do not require a touch at login (pam_u2f's -P).") var noPresence = false
    @Flag(help: "Make a resident (discoverable) credential, kept on the key (pamu2fcfg -r; key handle * in the line).") var resident = false
    @Option(help: "text or json.") var format: OutputFormat = .text

    // The work is synchronous and kept out of the async run(in:): inside it, this body crashes
    // the release compiler's coroutine splitting (Swift 6.3.1, signal 11 in CoroSplit).
    func run(in context: CommandContext) async throws {
        let credential = try makeCredential(in: context)
        let added = try await context.addFido([credential], user: user, source: "enroll")
        switch format {
        case .json: context.print(FidoOutput.json(added[0], user: user).rendered)
        case .text:
            context.print("Enrolled FIDO credential \(added[0].serial) for \(user) (\(credential.type.rawValue), origin \(credential.origin)).")
            context.print("pam_u2f line: \(FidoCredential.u2fLine(user: user, added))")
        }
    }

    /// The credential the attached key makes (and whose attestation was checked).
    @inline(never)
    private func makeCredential(in context: CommandContext) throws -> FidoCredential {
        try Store.validate(user: user)
        var enrollment = FidoKeyEnrollment(user: user, origin: "")
        enrollment.type = try FidoKeyEnrollment.keyType(type)
        var fido = context.settings.fido
        if let origin {
            guard FidoSettings.validOrigin(origin) else { throw CLIError.usage("--origin \(TerminalText.quoted(origin)) is not a usable RP ID") }
            fido.origin = origin
        }
        let rpID = fido.effectiveOrigin
        enrollment.origin = rpID
        enrollment.presence = !noPresence
        enrollment.verification = uv
        enrollment.resident = resident
        enrollment.pin = pin ? try context.secretLine("PIN of the security key: ", "PIN") : nil
        defer { wipe(&enrollment.pin) }
        return try enrollment.make()
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
        let credentials = try await context.fidoCredentials(user: user)
        switch format {
        case .json: context.print(JSONOutput.array(credentials.map { FidoOutput.json($0, user: user) }).rendered)
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

    /// A pam_u2f mapping file (u2f_keys, u2f_mappings), read byte-wise as pam_u2f reads it (any
    /// bytes, CRLF lines): a line names a user and holds a credential field, the file has a `,`,
    /// no user field but a `#` one has a `/` or `<`; not an otpauth list.
    static func looksLikeMappingFile(_ bytes: [UInt8]) -> Bool {
        guard bytes.contains(UInt8(ascii: ",")), !contains(bytes, "otpauth") else { return false }
        let lines = U2FMappingFile.lines(bytes, origin: "", appID: "")
        return lines.contains { !$0.entries.isEmpty }
            && lines.allSatisfy { line in
                line.userBytes.first == UInt8(ascii: "#") || !line.userBytes.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "<") }
            }
    }

    private static func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        let wanted = Array(text.utf8)
        guard bytes.count >= wanted.count else { return false }
        return (0...(bytes.count - wanted.count)).contains { bytes[$0..<$0 + wanted.count].elementsEqual(wanted) }
    }

    /// The FIDO settings an import binds credentials with: `--origin` (the origin, and the app
    /// ID of old U2F-format credentials, they were made for: pamu2fcfg -o), else securotp.conf's.
    static func settings(_ context: CommandContext, origin: String?) -> FidoSettings {
        var fido = context.settings.fido
        if let origin {
            fido.origin = origin
            fido.appID = origin
        }
        return fido
    }

    /// `securotp import USER FILE` with a pam_u2f mapping file: USER's line (the last one, as
    /// pam_u2f reads it), all its credentials in the line's order or none; a credential that
    /// cannot be imported (malformed) stops the import with the file, line and what to do.
    static func run(user: String, mappingFile bytes: [UInt8], path: String, origin: String?, format: OutputFormat, context: CommandContext) async throws {
        let fido = settings(context, origin: origin)
        let shownPath = TerminalText.escaped(path)
        guard let line = U2FMappingFile.line(for: user, in: bytes, origin: fido.effectiveOrigin, appID: fido.effectiveAppID) else {
            throw CLIError(.invalidInput, "\(shownPath) has no line for \(user) (pam_u2f mapping file: user:KH,PK,type,attributes); nothing imported")
        }
        if let problem = line.problems.first {
            throw CLIError(.invalidInput, "\(shownPath):\(line.number): \(problem); nothing imported")
        }
        guard !line.entries.isEmpty else {
            throw CLIError(.invalidInput, "\(shownPath):\(line.number): the line for \(user) holds no credential; nothing imported")
        }
        let added = try await context.addFido(line.credentials, user: user, source: "mapping-file")
        report(added, user: user, from: "\(shownPath):\(line.number)", format: format, context: context)
    }

    /// `securotp import --all FILE`: every user's line of a pam_u2f mapping file (the last one
    /// per user, as pam_u2f reads it), in one store transaction: a line that does not parse, a
    /// user name the store refuses, a credential a user already has or a token limit stops the
    /// whole import, naming the file and line; nothing is imported then. A line whose user field
    /// starts with `#` names no account (pam_u2f matches it to none): a comment, skipped.
    static func runAll(mappingFile path: String, origin: String?, format: OutputFormat, context: CommandContext) throws {
        let bytes = try ImportInput.source(path)
        let shownPath = TerminalText.escaped(path)
        guard looksLikeMappingFile(bytes) else {
            throw CLIError(.importInvalid, "\(shownPath) is not a pam_u2f mapping file (user:KH,PK,type,attributes per line); nothing imported")
        }
        let fido = settings(context, origin: origin)
        var last: [String: U2FMappingFile.Line] = [:]
        var order: [String] = []
        for line in U2FMappingFile.lines(bytes, origin: fido.effectiveOrigin, appID: fido.effectiveAppID) {
            if line.userBytes.first == UInt8(ascii: "#") { continue }
            guard let user = line.user else {
                throw CLIError(.importInvalid, "\(shownPath):\(line.number): the user name is not UTF-8; nothing imported")
            }
            if last[user] == nil { order.append(user) }
            last[user] = line
        }
        var byUser: [(user: String, credentials: [FidoCredential])] = []
        for user in order {
            guard let line = last[user] else { continue }
            if let problem = line.problems.first {
                throw CLIError(.importInvalid, "\(shownPath):\(line.number): \(problem); nothing imported")
            }
            guard !line.entries.isEmpty else {
                throw CLIError(.importInvalid, "\(shownPath):\(line.number): the line for \(TerminalText.quoted(user)) holds no credential; nothing imported")
            }
            do {
                try Store.validate(user: user)
            } catch {
                throw CLIError(.importInvalid, "\(shownPath):\(line.number): \(error.message); nothing imported")
            }
            byUser.append((user, line.credentials))
        }
        guard !byUser.isEmpty else {
            throw CLIError(.importInvalid, "\(shownPath) has no user's line; nothing imported")
        }
        // One transaction for every user needs the store itself, not a validator's API.
        guard !context.fidoThroughService else {
            throw CLIError(.localStoreOnly, "--all imports into this host's store only (one transaction for every user); with --server or --database, import each user: securotp import USER \(shownPath)")
        }
        let store = try context.openFidoStore()
        let added: [(user: String, credentials: [FidoCredential])]
        do {
            added = try store.addFido(byUser: byUser, source: "mapping-file", maxTokens: context.settings.maxTokens, now: context.now())
        } catch {
            // The store's kind (limit, conflict, …) keeps its code; the message names the file.
            throw ServiceError(ServiceError(error).code, "\(shownPath): \(error.message); nothing imported")
        }
        switch format {
        case .json:
            context.print(JSONOutput.array(added.flatMap { entry in entry.credentials.map { FidoOutput.json($0, user: entry.user) } }).rendered)
        case .text:
            for entry in added {
                report(entry.credentials, user: entry.user, from: "\(shownPath):\(last[entry.user]?.number ?? 0)", format: .text, context: context)
            }
            context.print("Imported the FIDO credentials of \(added.count) user\(added.count == 1 ? "" : "s") from \(shownPath).")
        }
    }

    private static func report(_ added: [FidoCredential], user: String, from: String, format: OutputFormat, context: CommandContext) {
        switch format {
        case .json: context.print(JSONOutput.array(added.map { FidoOutput.json($0, user: user) }).rendered)
        case .text:
            let origins = Set(added.map(\.origin)).sorted().joined(separator: ", ")
            context.print("Imported \(added.count) FIDO credential\(added.count == 1 ? "" : "s") for \(user) from \(from) (origin \(origins)): \(added.map(\.serial).joined(separator: ", "))")
        }
    }

    static func run(user: String, line: String, origin: String?, format: OutputFormat, context: CommandContext) async throws {
        let fido = settings(context, origin: origin)
        let parsed = FidoCredential.parse(line: line, origin: fido.effectiveOrigin, appID: fido.effectiveAppID)
        guard parsed.problem.isEmpty else { throw CLIError(.invalidInput, "pam_u2f line: \(parsed.problem)") }
        guard parsed.user.isEmpty || parsed.user == user else {
            throw CLIError(.invalidInput, "the pam_u2f line is for \(TerminalText.quoted(parsed.user)), not \(user)")
        }
        let added = try await context.addFido(parsed.credentials, user: user, source: "pamu2fcfg")
        report(added, user: user, from: "the pam_u2f line", format: format, context: context)
    }
}
