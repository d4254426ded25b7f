import ArgumentParser
import SecurOTPAuthenticator
import SecurOTPCommandLine

struct Code: StoreCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a token's current code, the next one, and the seconds the current one has left.",
        discussion: """
        SERIAL may be left out when you have one token. Time-based tokens (TOTP, RSA SecurID) show the code for now and the one that follows. HOTP tokens show the code for their counter and move the counter on, like pressing the button of a hardware token: each run shows a new code, and there is no "next".

        PINPad tokens (PIN "pinpad" in list) add your PIN into the code digit by digit, as the token device would; the PIN is read from the terminal with echo off, from --pin-file, or from a line of standard input when that is not a terminal. The authenticator does not know or store your PIN: a wrong PIN gives a wrong passcode, which the server refuses. --no-pin shows the bare tokencode (what the first login of a new PINPad token asks for). Fob tokens show the tokencode; type your PIN in front of it.

        Examples:
          securotp-authenticator code
          securotp-authenticator code 000123456789 --pin-file ~/.pin
          securotp-authenticator code 4821093375 --format json
        """
    )

    @OptionGroup var store: StoreOptions

    @Argument(help: "The token's serial (see list); optional with one token.")
    var serial: String?

    @Option(name: .customLong("pin-file"), help: ArgumentHelp("PINPad tokens: read the PIN from the first line of FILE.", valueName: "FILE"))
    var pinFile: String?

    @Flag(name: .customLong("no-pin"), help: "PINPad tokens: show the tokencode without a PIN.")
    var noPIN = false

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func validate() throws {
        if pinFile != nil && noPIN { throw ValidationError("give --pin-file or --no-pin, not both") }
    }

    func run(in context: Context) throws {
        let store = try context.open()
        let token = try chosenToken(store)
        var pin = token.isExpired(at: context.now) ? nil : try readPIN(for: token, context) // expired: refused without asking
        defer { wipe(&pin) }
        let codes = try store.codes(serial: token.serial, pin: pin, now: context.now)
        switch format {
        case .json: try context.printJSON(CodesJSON(codes: codes))
        case .text: context.print(text(codes))
        }
    }

    private func chosenToken(_ store: AuthenticatorStore) throws -> StoredToken {
        if let serial { return try store.token(serial: serial) }
        let tokens = try store.tokens()
        guard tokens.count == 1 else {
            guard !tokens.isEmpty else { throw AuthenticatorError(.notFound, "no tokens yet; import one with: securotp-authenticator import SOURCE") }
            throw CLIError.usage("you have \(tokens.count) tokens; name one: securotp-authenticator code SERIAL (serials: \(tokens.map(\.serial).joined(separator: ", ")))")
        }
        return tokens[0]
    }

    /// A PIN only for PINPad tokens (the store refuses one for other tokens).
    private func readPIN(for token: StoredToken, _ context: Context) throws -> [UInt8]? {
        if let pinFile { return try Terminal.firstLine(of: pinFile, what: "PIN") }
        guard token.pinMode == .addedByToken, !noPIN else { return nil }
        return try context.secretLine("PIN for token \(token.serial): ", "PIN")
    }

    private func text(_ codes: ShownCodes) -> String {
        let token = codes.token
        var title = "Token \(token.serial)"
        if !token.nickname.isEmpty { title += " (\(token.nickname))" }
        var lines: [String]
        if let seconds = codes.secondsRemaining, let next = codes.next {
            lines = [title + ":", "  current  \(codes.current)  (\(seconds) s left)", "  next     \(next)"]
        } else {
            lines = [title + ":", "  code     \(codes.current)  (counter \(codes.counter ?? 0); the next run shows a new code)"]
        }
        switch token.pinMode {
        case .addedByToken: lines.append(codes.pinApplied ? "Your PIN is added into these codes." : "Bare tokencode, without your PIN.")
        case .prefix: lines.append("Type your PIN, then the code.")
        case .none: break
        }
        return lines.joined(separator: "\n")
    }
}

/// `code --format json`. Absent values are null, never left out.
struct CodesJSON: Encodable {
    let codes: ShownCodes

    enum Keys: String, CodingKey {
        case serial, nickname, kind, digits, current, next, secondsRemaining = "seconds_remaining", counter
        case pinMode = "pin_mode", pinApplied = "pin_applied"
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(codes.token.serial, forKey: .serial)
        try container.encode(codes.token.nickname, forKey: .nickname)
        try container.encode(codes.token.kind.rawValue, forKey: .kind)
        try container.encode(codes.token.digits, forKey: .digits)
        try container.encode(codes.current, forKey: .current)
        try container.encode(codes.next, forKey: .next)
        try container.encode(codes.secondsRemaining, forKey: .secondsRemaining)
        try container.encode(codes.counter, forKey: .counter)
        try container.encode(codes.token.pinMode.rawValue, forKey: .pinMode)
        try container.encode(codes.pinApplied, forKey: .pinApplied)
    }
}
