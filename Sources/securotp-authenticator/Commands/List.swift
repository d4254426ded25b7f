import ArgumentParser
import SecurOTPAuthenticator
import SecurOTPCommandLine

struct List: StoreCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show your tokens: serial, nickname, issuer, kind, digits, interval or counter, PIN style, expiry.",
        discussion: """
        INTERVAL is how long a code lasts (TOTP, SecurID), or for HOTP the counter the next code is made from. PIN: fob = type your PIN in front of the code; pinpad = the code command adds your PIN into the code, as the token device would.

        Examples:
          securotp-authenticator list
          securotp-authenticator list --format json
        """
    )

    @OptionGroup var store: StoreOptions

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func run(in context: Context) throws {
        // Listing never creates a store: no store is an empty list.
        let tokens = AuthenticatorStore.exists(context.paths) ? try context.open().tokens() : []
        switch format {
        case .json:
            try context.printJSON(tokens.map(TokenJSON.init))
        case .text:
            guard !tokens.isEmpty else {
                context.print("No tokens yet. Import one with: securotp-authenticator import SOURCE")
                return
            }
            context.print(Output.table(Output.tokenHeader, tokens.map { Output.row($0, now: context.now) }))
        }
    }
}
