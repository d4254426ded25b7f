import ArgumentParser
import SecurOTPService
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
        switch format {
        case .json:
            context.print(JSONValue.array(tokens.map(Formatting.json)).rendered)
        case .text:
            if tokens.isEmpty {
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
            context.print(Formatting.table(header, rows))
        }
    }
}
