import ArgumentParser
import Foundation
import SecurOTPService
import SecurOTPStore
import SecurOTPCommandLine

struct List: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show tokens of one user, or of all users.",
        discussion: "Example: securotp list alice --format json"
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Only this user's tokens.")
    var user: String?

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func run(in context: CommandContext) async throws {
        let now = context.now()
        let tokens = try await context.withService { service in try await service.tokens(user: user, caller: context.caller) }.tokens
        let fido = try await fidoCredentials(context)
        switch format {
        case .json:
            context.print(JSONOutput.array(tokens.map(Formatting.json) + fido.map { FidoOutput.json($0.credential, user: $0.user) }).rendered)
        case .text:
            if tokens.isEmpty && fido.isEmpty {
                context.print(user.map { "\($0) has no tokens. Enroll one with: securotp enroll \($0)" } ?? "No tokens enrolled. Enroll one with: securotp enroll USER")
                return
            }
            var header = ["SERIAL", "NICKNAME", "KIND", "ALGORITHM", "DIGITS", "PERIOD", "PIN", "STATE", "EXPIRES", "CREATED", "LAST USED"]
            if user == nil { header.insert("USER", at: 0) }
            let rows = tokens.map { token -> [String] in
                var row = [token.serial, token.nickname.isEmpty ? "-" : token.nickname, token.kind, token.algorithm,
                           String(token.digits), Formatting.period(token), Formatting.pin(token),
                           token.userLocked == true ? "locked" : (token.isExpired(at: now) ? "expired" : token.state),
                           token.expires > 0 ? Formatting.time(token.expires) : "never",
                           Formatting.time(token.created), Formatting.time(token.lastUsed)]
                if user == nil { row.insert(token.user, at: 0) }
                return row
            }
            let fidoRows = fido.map { entry -> [String] in
                let credential = entry.credential
                var row = [credential.serial, "-", "fido", credential.type.rawValue, "-", "-", credential.pin ? "key" : "-",
                           credential.cloned ? "cloned" : "active", "never", Formatting.time(credential.created),
                           Formatting.time(credential.lastUsed)]
                if user == nil { row.insert(entry.user, at: 0) }
                return row
            }
            context.print(Formatting.table(header, rows + fidoRows))
        }
    }

    /// FIDO credentials (docs/fido.md): from the local store, or with `--server` or `--database`
    /// one user's through the service (`GET /v1/users/{user}/fido`; the service lists them per user).
    private func fidoCredentials(_ context: CommandContext) async throws -> [(user: String, credential: FidoCredential)] {
        if context.fidoThroughService, let user {
            return try await context.fidoCredentials(user: user).map { (user, $0) }
        }
        guard case .local = context.target, FileManager.default.fileExists(atPath: context.settings.paths.database) else { return [] }
        let store = try Store.open(context.settings.paths, .migrate)
        let users = try user.map { [$0] } ?? store.fidoUsers()
        return try users.flatMap { name in try store.fidoCredentials(user: name).map { (name, $0) } }
    }
}
