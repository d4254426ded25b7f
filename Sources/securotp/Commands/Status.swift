import ArgumentParser
import SecurOTPStore

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show where the store lives and what it holds.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func run() throws {
        let context = try CommandContext(global)
        let paths = context.settings.paths
        let store = try context.openStore()
        let tokens = try store.tokens()
        let users = Set(tokens.map(\.user))
        let locked = try store.lockedUsers(now: CommandContext.now())
        switch format {
        case .json:
            print(JSONValue.object([
                ("database", .string(paths.database)),
                ("key_file", .string(paths.keyFile)),
                ("config", .string(paths.config)),
                ("schema_version", .number(store.schemaVersion)),
                ("users", .number(Int64(users.count))),
                ("tokens", .number(Int64(tokens.count))),
                ("locked_users", .array(locked.map { .string($0) })),
            ]).rendered)
        case .text:
            print(Formatting.table(["", ""], [
                ["Database:", "\(paths.database) (schema \(store.schemaVersion))"],
                ["Key file:", "\(paths.keyFile) (owner-only, loaded)"],
                ["Config:", paths.config],
                ["Users with tokens:", String(users.count)],
                ["Tokens:", "\(tokens.count) (\(tokens.filter { $0.parameters.kind == .totp }.count) TOTP, \(tokens.filter { $0.parameters.kind == .hotp }.count) HOTP)"],
                ["Locked users:", locked.isEmpty ? "none" : locked.joined(separator: ", ")],
            ]).split(separator: "\n").dropFirst().joined(separator: "\n"))
        }
    }
}
