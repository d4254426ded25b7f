import ArgumentParser
import SecurOTPService
import SecurOTPStore

struct Nickname: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Name a token (at most 32 characters).",
        discussion: "Example: securotp nickname alice 4821093375 \"work phone\""
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The token's owner.", transform: CommandContext.canonical) var user: String
    @Argument(help: "The token's serial (see securotp list).") var serial: String
    @Argument(help: "The new nickname; \"\" clears it.") var name: String

    func run(in context: CommandContext) async throws {
        try await context.withService { service in
            try await service.setNickname(user: user, serial: serial, NicknameRequest(nickname: name), caller: context.caller)
        }
        context.print("Token \(serial) of \(user) is now called \"\(name)\".")
    }
}

struct Delete: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete one token; its codes stop working at once.",
        discussion: "Example: securotp delete alice 4821093375"
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The token's owner.", transform: CommandContext.canonical) var user: String
    @Argument(help: "The token's serial (see securotp list).") var serial: String

    func run(in context: CommandContext) async throws {
        try await context.withService { service in try await service.deleteToken(user: user, serial: serial, caller: context.caller) }
        context.print("Deleted token \(serial) of \(user).")
    }
}

struct Reset: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete all of a user's tokens and clear their failure count and lock.",
        discussion: """
        Without nullok in the PAM stack the user then cannot log in until a new token is enrolled. Example: securotp reset alice
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The user to reset.", transform: CommandContext.canonical) var user: String

    func run(in context: CommandContext) async throws {
        let removed = try await context.withService { service in try await service.reset(user: user, caller: context.caller) }.removed
        context.print("Removed \(removed) token\(removed == 1 ? "" : "s") of \(user).")
    }
}

struct Unlock: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lift a lock caused by repeated wrong codes and reset the failure count.",
        discussion: "Example: securotp unlock alice"
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The locked user.", transform: CommandContext.canonical) var user: String

    func run(in context: CommandContext) async throws {
        let wasLocked = try await context.withService { service in try await service.unlock(user: user, caller: context.caller) }.wasLocked
        context.print(wasLocked ? "Unlocked \(user)." : "\(user) was not locked; failure count reset.")
    }
}

struct BindingIDCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "binding-id",
        abstract: "Print this host's binding ID for a user (24 hex characters).",
        discussion: """
        Token issuers bind provisioning files to this ID; it is stable for this host and user and differs between users and hosts. Without USER, prints the ID for the invoking user. With --server, the validator's binding ID (tokens imported there are bound to it).
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The Unix user (default: the user running the command).", transform: CommandContext.canonical) var user: String?

    func run(in context: CommandContext) async throws {
        let name = user ?? CommandContext.invokingUser()
        try Store.validate(user: name)
        context.print(try await context.withService(create: true) { service in try await service.bindingID(user: name, caller: context.caller) }.bindingId)
    }
}
