import ArgumentParser
import SecurOTPService

struct Resync: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resynchronise a token whose clock or counter drifted, from two consecutive codes.",
        discussion: "Give two codes the token shows one after the other (for PIN tokens: the tokencodes, without PIN). The drift is stored and used from then on; the two codes are used up. Example: securotp resync alice 000123456789 123456 654321"
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The token's owner.", transform: CommandContext.canonical) var user: String
    @Argument(help: "The token's serial.") var serial: String
    @Argument(help: "A code from the token.") var first: String
    @Argument(help: "The code that followed it.") var second: String

    func run(in context: CommandContext) async throws {
        let result = try await context.withService { service in
            try await service.resync(user: user, serial: serial, ResyncRequest(first: first, second: second), caller: context.caller)
        }
        context.print("Token \(serial) of \(user) resynchronised (\(result.description)).")
    }
}
