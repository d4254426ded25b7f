import ArgumentParser
import Glibc
import SecurOTPService
import SecurOTPStore
import SecurOTPCommandLine

struct PIN: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Set, clear or require a token's PIN.",
        discussion: """
        PINs have 4 to 8 characters: digits only for tokens that add the PIN into their code (PINPad style), letters and digits for tokens where the PIN is typed before the code (fob style). Only a slow salted hash is stored.

        Examples:
          securotp pin set alice 000123456789        # asks twice on the terminal
          printf '2468\\n2468\\n' | securotp pin set alice 000123456789
          securotp pin require alice 000123456789    # new PIN at the next login
        """,
        subcommands: [Set.self, Clear.self, Require.self]
    )

    struct Set: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Set a token's PIN (read twice from the terminal, or two lines of standard input).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The token's owner.", transform: CommandContext.canonical) var user: String
        @Argument(help: "The token's serial.") var serial: String

        func run(in context: CommandContext) async throws {
            try await context.withService { service in
                // Ask for the PIN only for a token that exists.
                guard try await service.tokens(user: user, caller: context.caller).tokens.contains(where: { $0.serial == serial }) else {
                    throw ServiceError(.notFound, "\(user) has no token with serial \(serial); see: securotp list \(user)")
                }
            }
            var first = try context.secretLine("New PIN: ", "PIN (give it twice, one per line)")
            var second = try context.secretLine("New PIN again: ", "second PIN line")
            defer {
                for index in first.indices { first[index] = 0 }
                for index in second.indices { second[index] = 0 }
            }
            guard first == second else { throw CLIError(.invalidInput, "the two PINs differ; nothing changed") }
            let request = PINRequest(pin: String(decoding: first, as: UTF8.self))
            try await context.withService { service in try await service.setPIN(user: user, serial: serial, request, caller: context.caller) }
            context.print("PIN set for token \(serial) of \(user).")
        }
    }

    struct Clear: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a token's PIN: the passcode is the tokencode alone.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The token's owner.", transform: CommandContext.canonical) var user: String
        @Argument(help: "The token's serial.") var serial: String

        func run(in context: CommandContext) async throws {
            try await context.withService { service in try await service.clearPIN(user: user, serial: serial, caller: context.caller) }
            context.print("PIN cleared for token \(serial) of \(user).")
        }
    }

    struct Require: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Make the next login with this token set a new PIN.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The token's owner.", transform: CommandContext.canonical) var user: String
        @Argument(help: "The token's serial.") var serial: String

        func run(in context: CommandContext) async throws {
            try await context.withService { service in try await service.requirePIN(user: user, serial: serial, caller: context.caller) }
            context.print("Token \(serial) of \(user) will ask for a new PIN at the next login.")
        }
    }
}
