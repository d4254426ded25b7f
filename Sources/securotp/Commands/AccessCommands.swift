import ArgumentParser
import SecurOTPService
import SecurOTPStore
import SecurOTPCommandLine

/// `securotp host add|list|revoke` and `securotp admin add|list|revoke`: who may call a
/// securotpd validator. Credentials are printed once (or written to a file) and kept hashed.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Manage the credentials hosts (PAM modules) use to ask a securotpd validator.",
        discussion: """
        Examples:
          securotp host add web1 --output /root/web1.cred     # copy to web1 as host_credential=
          securotp host add jump --groups wheel,admins        # may verify only these groups' members
          securotp host add laptop --offline-codes 10         # may cache 10 HOTP codes per token
          securotp host list
          securotp host revoke web1
        """,
        subcommands: [Add.self, ListCredentials<HostKind>.self, Revoke<HostKind>.self]
    )

    struct Add: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Create a host credential (printed once; only its hash is kept).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The host's name: letters, digits, '.', '-', '_', '@'.") var name: String
        @Option(help: ArgumentHelp("Users this host may verify, comma-separated (default: everyone).", valueName: "USERS")) var users: String?
        @Option(help: ArgumentHelp("Unix groups whose members this host may verify; '!' excludes (resolved by the validator through NSS).", valueName: "GROUPS"))
        var groups: String?
        @Option(name: .customLong("offline-codes"), help: "Future HOTP codes per token this host may cache for logins while the validator is unreachable (0–100).")
        var offlineCodes = 0
        @OptionGroup var output: CredentialOutput

        func run(in context: CommandContext) async throws {
            let request = CredentialRequest(name: name, users: users.map(split), groups: groups.map(split), offlineCodes: offlineCodes)
            try await output.create(kind: .host, request, context: context)
        }

        private func split(_ text: String) -> [String] { text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } }
    }
}

struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Manage the credentials admins use with securotp --server.",
        discussion: """
        The first admin is made on the validator's own store: run there as root (or with --state-dir, or --database for PostgreSQL); later ones can be added remotely.

        Examples:
          securotp admin add alice --output /root/alice.cred
          securotp --server https://otp.example.com:8443 --credential /root/alice.cred list
          securotp admin revoke alice
        """,
        subcommands: [Add.self, ListCredentials<AdminKind>.self, Revoke<AdminKind>.self]
    )

    struct Add: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Create an admin credential (printed once; only its hash is kept).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The admin's name: letters, digits, '.', '-', '_', '@'.") var name: String
        @OptionGroup var output: CredentialOutput

        func run(in context: CommandContext) async throws {
            try await output.create(kind: .admin, CredentialRequest(name: name), context: context)
        }
    }
}

/// Where a new credential goes: standard output (once), or an owner-only file.
struct CredentialOutput: ParsableArguments {
    @Option(help: ArgumentHelp("Write the credential to FILE (mode 0600) instead of printing it.", valueName: "FILE"))
    var output: String?

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func create(kind: CredentialKind, _ request: CredentialRequest, context: CommandContext) async throws {
        let created = try await context.withService(create: true) { service in
            try await service.addCredential(kind: kind, request, caller: context.caller)
        }
        if let output {
            let line = Array((created.credential + "\n").utf8)
            try line.withUnsafeBufferPointer { (bytes) throws(StoreError) in try FileSecurity.writeSecret(output, bytes: bytes, replace: false) }
        }
        switch format {
        case .json:
            var members: [(String, JSONOutput)] = [("name", .string(created.name)), ("kind", .string(created.kind))]
            members.append(output.map { ("file", .string($0)) } ?? ("credential", .string(created.credential)))
            context.print(JSONOutput.object(members).rendered)
        case .text:
            if let output {
                context.print("Created \(kind == .admin ? "an" : "a") \(kind.rawValue) credential for \(created.name) in \(output).")
            } else {
                context.print("Credential for \(kind.rawValue) \(created.name) (shown once; store it in an owner-only file):\n\n\(created.credential)\n")
            }
            if kind == .host {
                context.print("On that host: host_credential=FILE in /etc/securotp/securotp.conf or the PAM line, with validator=https://…")
            }
        }
    }
}

protocol CredentialKindName { static var kind: CredentialKind { get } }
enum HostKind: CredentialKindName { static var kind: CredentialKind { .host } }
enum AdminKind: CredentialKindName { static var kind: CredentialKind { .admin } }

struct ListCredentials<Kind: CredentialKindName>: ContextCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "list", abstract: "Show \(Kind.kind.rawValue) credentials, in force and revoked (never the secrets).")
    }

    @OptionGroup var global: GlobalOptions
    @Option(help: "text or json.") var format: OutputFormat = .text

    func run(in context: CommandContext) async throws {
        let credentials = try await context.withService { service in try await service.credentials(kind: Kind.kind, caller: context.caller) }.credentials
        switch format {
        case .json:
            context.print(JSONOutput.array(credentials.map { credential in
                .object([("name", .string(credential.name)), ("kind", .string(credential.kind)), ("id", .string(credential.id)),
                         ("created", Formatting.isoTime(credential.created)), ("revoked", Formatting.isoTime(credential.revoked)),
                         ("last_used", Formatting.isoTime(credential.lastUsed)), ("users", .array(credential.users.map { .string($0) })),
                         ("groups", .array(credential.groups.map { .string($0) })), ("offline_codes", .number(Int64(credential.offlineCodes)))])
            }).rendered)
        case .text:
            if credentials.isEmpty { return context.print("No \(Kind.kind.rawValue) credentials. Create one with: securotp \(Kind.kind.rawValue) add NAME") }
            var header = ["NAME", "ID", "STATE", "CREATED", "LAST USED"]
            if Kind.kind == .host { header += ["USERS", "GROUPS", "OFFLINE"] }
            context.print(Formatting.table(header, credentials.map { credential in
                var row = [credential.name, credential.id, credential.revoked > 0 ? "revoked \(Formatting.time(credential.revoked))" : "in force",
                           Formatting.time(credential.created), Formatting.time(credential.lastUsed)]
                if Kind.kind == .host {
                    row += [credential.users.isEmpty ? "-" : credential.users.joined(separator: ","),
                            credential.groups.isEmpty ? "-" : credential.groups.joined(separator: ","), String(credential.offlineCodes)]
                }
                return row
            }))
        }
    }
}

struct Revoke<Kind: CredentialKindName>: ContextCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "revoke", abstract: "Revoke a \(Kind.kind.rawValue) credential; it stops working at once.")
    }

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The name it was added under.") var name: String

    func run(in context: CommandContext) async throws {
        try await context.withService { service in try await service.revokeCredential(kind: Kind.kind, name: name, caller: context.caller) }
        context.print("Revoked the \(Kind.kind.rawValue) credential of \(name).")
    }
}

struct Audit: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the audit log: who did what, from where, with what result (newest first).",
        discussion: "Never shows codes, PINs or seeds. Examples: securotp audit; securotp audit alice --limit 20 --format json"
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "Only entries about this user.") var user: String?
    @Option(help: "How many entries at most (1–10000).") var limit = 50
    @Option(help: "text or json.") var format: OutputFormat = .text

    func run(in context: CommandContext) async throws {
        let entries = try await context.withService { service in try await service.audit(user: user, limit: limit, caller: context.caller) }.entries
        switch format {
        case .json:
            context.print(JSONOutput.array(entries.map { entry in
                .object([("id", .number(entry.id)), ("time", Formatting.isoTime(entry.time)), ("actor_kind", .string(entry.actorKind)),
                         ("actor", .string(entry.actor)), ("address", .string(entry.address)), ("action", .string(entry.action)),
                         ("user", .string(entry.user)), ("serial", .string(entry.serial)), ("result", .string(entry.result)),
                         ("detail", .string(entry.detail))])
            }).rendered)
        case .text:
            if entries.isEmpty { return context.print("The audit log is empty.") }
            context.print(Formatting.table(["TIME", "ACTOR", "FROM", "ACTION", "USER", "SERIAL", "RESULT", "DETAIL"], entries.map { entry in
                [Formatting.time(entry.time), "\(entry.actorKind):\(entry.actor)", entry.address, entry.action,
                 entry.user.isEmpty ? "-" : entry.user, entry.serial.isEmpty ? "-" : entry.serial, entry.result, entry.detail]
            }))
        }
    }
}
