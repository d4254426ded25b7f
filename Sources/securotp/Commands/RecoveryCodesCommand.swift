import ArgumentParser
import SecurOTPService
import SecurOTPCommandLine

struct RecoveryCodesCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "recovery-codes",
        abstract: "Print new single-use recovery codes for a user (replacing any old ones).",
        discussion: "Each code works once at the verification prompt, instead of a token code. They are shown only now; only slow hashes are kept. Example: securotp recovery-codes alice --count 8"
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The user.", transform: CommandContext.canonical) var user: String
    @Option(help: "How many codes, 1–20.") var count = 10
    @Option(help: "text or json.") var format: OutputFormat = .text

    func run(in context: CommandContext) async throws {
        let codes = try await context.withService(create: true) { service in
            try await service.recoveryCodes(user: user, RecoveryCodesRequest(count: count), caller: context.caller)
        }.codes
        switch format {
        case .json: context.print(JSONOutput.object([("user", .string(user)), ("codes", .array(codes.map { .string($0) }))]).rendered)
        case .text:
            context.print("Recovery codes for \(user) (each works once; store them offline):\n")
            for code in codes { context.print("  \(code)") }
        }
    }
}
