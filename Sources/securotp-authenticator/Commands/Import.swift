import ArgumentParser
import Foundation
import SecurOTPAuthenticator
import SecurOTPCore
import SecurOTPImport
import SecurOTPCommandLine

struct Import: StoreCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add tokens from an issuer: otpauth URIs, Google Authenticator exports, PSKC, RSA SecurID .sdtid and CTF.",
        discussion: """
        SOURCE is a file, - for standard input, or the token string itself (an otpauth:// URI or a SecurID CTF string). The format is detected; it is the same list the admin's securotp import reads. Everything in SOURCE is added or nothing is: a bad checksum, a wrong password, an expired token, or a SecurID token bound to another device stops the import with a message naming it.

        Device-bound SecurID tokens must be bound to this authenticator: give the issuer the ID that securotp-authenticator binding-id prints. On a terminal, a missing password is asked for.

        Examples:
          securotp-authenticator import 'otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP&issuer=ACME'
          securotp-authenticator import alice.sdtid --password-file ~/pw --nickname work
          zbarimg --raw -q export.png | securotp-authenticator import -
          securotp-authenticator import vendor.pskc --key-file transport.hex --format json
        """
    )

    @OptionGroup var store: StoreOptions

    @Argument(help: "File, - for standard input, or the token string.")
    var source: String

    @OptionGroup var options: ImportCommandOptions

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func run(in context: Context) throws {
        var input = try ImportInput.source(source)
        defer { for index in input.indices { input[index] = 0 } } // the source holds the seeds
        let transportKey = try options.readTransportKey()
        var secret = try options.readPassword()
        defer { wipe(&secret) }
        let store = try context.open(create: true)
        let tokens: [StoredToken]
        do {
            tokens = try store.importTokens(from: input, password: secret, transportKey: transportKey, nickname: options.nickname, now: context.now)
        } catch let error as ImportError where error.code == .password && secret == nil && Terminal.isInteractive && source != "-" {
            var asked: [UInt8]? = try context.secretLine("Password for \(source): ", "password")
            defer { wipe(&asked) }
            tokens = try store.importTokens(from: input, password: asked, transportKey: transportKey, nickname: options.nickname, now: context.now)
        }
        switch format {
        case .json:
            try context.printJSON(tokens.map(TokenJSON.init))
        case .text:
            context.print("Imported \(tokens.count) token\(tokens.count == 1 ? "" : "s") into \(context.paths.directory):")
            context.print(Output.table(Output.tokenHeader, tokens.map { Output.row($0, now: context.now) }))
            let example = tokens.count == 1 ? "" : " SERIAL"
            context.print("\nShow a code with: securotp-authenticator code\(example)")
        }
    }
}
