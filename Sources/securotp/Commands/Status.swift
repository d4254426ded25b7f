import ArgumentParser
import SecurOTPService
import SecurOTPCommandLine

struct Status: ContextCommand {
    static let configuration = CommandConfiguration(abstract: "Show where the store lives and what it holds.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func run(in context: CommandContext) async throws {
        let paths = context.settings.paths
        let status = try await context.withService { service in try await service.status(caller: context.caller) }
        switch format {
        case .json:
            var members: [(String, JSONOutput)] = [("store", .string(status.store)), ("database", .string(status.location))]
            if !context.isRemote { members += [("key_file", .string(paths.keyFile)), ("config", .string(paths.config))] }
            members += [
                ("schema_version", .number(status.schemaVersion)),
                ("users", .number(Int64(status.users))),
                ("tokens", .number(Int64(status.tokens))),
                ("locked_users", .array(status.lockedUsers.map { .string($0) })),
            ]
            context.print(JSONOutput.object(members).rendered)
        case .text:
            var rows = [["Database:", "\(status.location) (\(status.store), schema \(status.schemaVersion))"]]
            if !context.isRemote {
                rows += [["Key file:", "\(paths.keyFile) (owner-only, loaded)"], ["Config:", paths.config]]
            }
            rows += [
                ["Users with tokens:", String(status.users)],
                ["Tokens:", "\(status.tokens) (\(status.totpTokens) TOTP, \(status.hotpTokens) HOTP)"],
                ["Locked users:", status.lockedUsers.isEmpty ? "none" : status.lockedUsers.joined(separator: ", ")],
            ]
            context.print(Formatting.table(["", ""], rows).split(separator: "\n").dropFirst().joined(separator: "\n"))
        }
    }
}
