import ArgumentParser
import SecurOTPAuthenticator
import SecurOTPCore
import SecurOTPCommandLine

struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print the securotp library version (and, in JSON, the store format).",
        discussion: "Example: securotp-authenticator version --format json"
    )

    @Option(help: "text or json.") var format: OutputFormat = .text

    func run() throws {
        switch format {
        case .json: print(try Output.json(VersionJSON(version: SecurOTPVersion.string, storeFormat: AuthenticatorStore.storeFormat)))
        case .text: print(SecurOTPVersion.string)
        }
    }
}

struct VersionJSON: Encodable {
    let version: String
    let storeFormat: Int64

    enum CodingKeys: String, CodingKey {
        case version, storeFormat = "store_format"
    }
}
