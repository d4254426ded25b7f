import ArgumentParser
import SecurOTPAuthenticator
import SecurOTPCommandLine

struct Nickname: StoreCommand {
    static let configuration = CommandConfiguration(
        abstract: "Name a token (at most 32 characters).",
        discussion: "Example: securotp-authenticator nickname 4821093375 \"work VPN\""
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The token's serial (see list).") var serial: String
    @Argument(help: "The new nickname; \"\" clears it.") var name: String

    func run(in context: Context) throws {
        try context.open().setNickname(serial: serial, nickname: name)
        context.print("Token \(serial) is now called \"\(name)\".")
    }
}

struct Delete: StoreCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete one token from this authenticator.",
        discussion: """
        The token's seed is gone from here; the server still accepts codes from any other copy of it. Example: securotp-authenticator delete 4821093375
        """
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The token's serial (see list).") var serial: String

    func run(in context: Context) throws {
        try context.open().delete(serial: serial)
        context.print("Deleted token \(serial).")
    }
}

struct Reset: StoreCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete every token and make a new key (and so a new binding ID).",
        discussion: """
        For a fresh start, and for a store that no longer opens (copied from another machine or user, key file lost). The old key file is overwritten before it is removed, so the old sealed seeds cannot be opened again. Tokens bound to the old binding ID must be issued again for the new one. Asks for confirmation on a terminal; scripts give --yes.

        Examples:
          securotp-authenticator reset
          securotp-authenticator reset --yes
        """
    )

    @OptionGroup var store: StoreOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false

    func run(in context: Context) throws {
        if !yes {
            guard Terminal.isInteractive else {
                throw CLIError.usage("reset deletes every token: confirm with --yes when not run from a terminal")
            }
            let count = AuthenticatorStore.tokenCount(context.paths).map { "\($0) token\($0 == 1 ? "" : "s")" } ?? "every token"
            guard try Terminal.confirm("This deletes \(count) in \(context.paths.directory) and makes a new key and binding ID. Type yes to go on: ") else {
                throw CLIError(.cancelled, "reset cancelled; nothing changed")
            }
        }
        let (removed, fresh) = try AuthenticatorStore.reset(context.paths, identity: context.identity, now: context.now)
        let what = removed.map { "Removed \($0) token\($0 == 1 ? "" : "s")" } ?? "Removed the old store (its tokens could not be counted)"
        context.print("\(what). New key made; the binding ID is now \(fresh.bindingID).")
    }
}

struct BindingIDCommand: StoreCommand {
    static let configuration = CommandConfiguration(
        commandName: "binding-id",
        abstract: "Print this authenticator's binding ID (24 hex digits).",
        discussion: """
        Give it to an issuer that binds SecurID tokens to a device: a token bound to it imports only here, for you. It is derived from this store's key, this machine's ID and your uid: stable until reset, different for every user and machine. Makes the store if there is none yet.

        Examples:
          securotp-authenticator binding-id
          securotp-authenticator binding-id --format json
        """
    )

    @OptionGroup var store: StoreOptions
    @Option(help: "text or json.") var format: OutputFormat = .text

    func run(in context: Context) throws {
        let id = try context.open(create: true).bindingID
        switch format {
        case .json: try context.printJSON(["binding_id": id])
        case .text: context.print(id)
        }
    }
}
