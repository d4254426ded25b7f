import ArgumentParser
import Glibc
import SecurOTPCore
import SecurOTPQR
import SecurOTPService
import SecurOTPStore
import SecurOTPCommandLine

struct Enroll: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a TOTP (default) or HOTP token for a Unix user.",
        discussion: """
        Prints the otpauth:// URI, a QR code for an authenticator app, and the base32 secret for manual entry. The secret is shown only now: it is stored sealed and never displayed again.

        Examples:
          securotp enroll alice
          securotp enroll alice --hotp --digits 8 --nickname "YubiKey slot 2"
          securotp enroll bob --algorithm SHA256 --period 60 --qr-png /root/bob.png
          securotp enroll carol --format json      # for scripts: serial, uri, secret
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The Unix user who will log in with the token.", transform: CommandContext.canonical)
    var user: String

    @Flag(help: "Counter-based token (RFC 4226) instead of time-based.")
    var hotp = false

    @Option(help: ArgumentHelp("OCRA (RFC 6287) challenge-response token with this suite, e.g. OCRA-1:HOTP-SHA1-6:QN08; the login shows a challenge.", valueName: "SUITE"))
    var ocra: String?

    @Option(help: "HMAC algorithm: SHA1, SHA256 or SHA512. Many apps support only SHA1.")
    var algorithm = "SHA1"

    @Option(help: "Code length, 6–8.")
    var digits = 6

    @Option(help: "TOTP time step in seconds, 1–300.")
    var period = 30

    @Option(help: "Issuer shown by the authenticator app.")
    var issuer = "securotp"

    @Option(help: "Account name in the app (default USER@HOSTNAME).")
    var label: String?

    @Option(help: "A name for the token in `securotp list` (≤ 32 characters).")
    var nickname = ""

    @Option(name: .customLong("qr-png"), help: ArgumentHelp("Also write the QR code as a PNG image (mode 0600: it holds the secret).", valueName: "FILE"))
    var qrPNG: String?

    @Flag(name: .customLong("no-qr"), help: "Do not draw the QR code in the terminal.")
    var noQR = false

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func validate() throws {
        if let ocra {
            do { _ = try OCRASuite(ocra) } catch { throw ValidationError("--ocra \(ocra): \(error.message)") }
        }
        guard HashAlgorithm(name: algorithm) != nil else { throw ValidationError("--algorithm must be SHA1, SHA256 or SHA512 (got \(algorithm))") }
        guard OTP.digitRange.contains(digits) else { throw ValidationError("--digits must be 6, 7 or 8 (got \(digits))") }
        guard OTP.periodRange.contains(period) else { throw ValidationError("--period must be 1–300 seconds (got \(period))") }
        for (name, value) in [("--issuer", issuer), ("--label", label ?? "")] where value.contains(":") {
            throw ValidationError("\(name) may not contain ':' (it separates issuer and account in the QR code)")
        }
    }

    func run(in context: CommandContext) async throws {
        try Store.validate(user: user)
        if !context.isRemote, !CommandContext.userExists(user) {
            CommandContext.warn("no user \(user) is known to this system (getpwnam); enrolling anyway")
        }
        let request = EnrollRequest(kind: ocra != nil ? "ocra" : hotp ? "hotp" : "totp", algorithm: algorithm, digits: digits,
                                    period: period, issuer: issuer, nickname: nickname, suite: ocra)
        let enrolled = try await context.withService(create: true) { service in
            try await service.enroll(user: user, request, caller: context.caller)
        }
        if ocra != nil { return printOCRA(enrolled, context) }
        try printOATH(enrolled, context)
    }

    private func printOATH(_ enrolled: EnrollResponse, _ context: CommandContext) throws {
        let token = enrolled.token
        guard let hashAlgorithm = HashAlgorithm(name: token.algorithm), let seed = Base32.decode(enrolled.secret) else {
            throw CLIError(.invalidInput, "the validator returned a token securotp cannot show (\(token.algorithm))")
        }
        let parameters = OATHParameters(kind: token.kind == "hotp" ? .hotp : .totp, algorithm: hashAlgorithm, digits: token.digits,
                                        period: token.period ?? 30, counter: UInt64(max(0, token.counter ?? 0)))
        let uri = OTPAuthURI(parameters: parameters, secret: seed, account: label ?? "\(user)@\(Self.hostname())", issuer: issuer).render()
        let qr = try? QRCode.encode(Array(uri.utf8), errorCorrection: .medium)
        if let path = qrPNG {
            guard let qr else { throw CLIError(.invalidInput, "the URI is too long for a QR code") }
            try qr.png().withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try FileSecurity.writeSecret(path, bytes: bytes, replace: true)
            }
        }
        let hotp = parameters.kind == .hotp
        switch format {
        case .json:
            context.print(JSONOutput.object([
                ("serial", .string(token.serial)),
                ("user", .string(user)),
                ("kind", .string(token.kind)),
                ("algorithm", .string(hashAlgorithm.name)),
                ("digits", .number(Int64(token.digits))),
                ("period", hotp ? .null : .number(Int64(parameters.period))),
                ("counter", hotp ? .number(Int64(parameters.counter)) : .null),
                ("uri", .string(uri)),
                ("secret", .string(enrolled.secret)),
                ("qr_png", qrPNG.map { .string($0) } ?? .null),
            ]).rendered)
        case .text:
            context.print("Enrolled \(token.kind.uppercased()) token \(token.serial) for \(user).\n")
            if !noQR, let qr {
                context.print("Scan this QR code with an authenticator app:\n")
                context.print(qr.terminalString(quietZone: 2, invert: true))
            }
            context.print("URI:     \(uri)")
            context.print("Secret:  \(Self.grouped(enrolled.secret))   (for manual entry; \(hashAlgorithm.name), \(token.digits) digits\(hotp ? ", counter \(parameters.counter)" : ", \(parameters.period) s"))")
            if let path = qrPNG { context.print("QR PNG:  \(path)") }
            context.print("\nThis secret is not shown again. Test it before you log out, with the code from the app:")
            context.print("  securotp test \(user)                  # the sudo stack; --service sshd|su|login for the others")
        }
    }

    /// OCRA tokens have no otpauth URI: the key goes to the device that answers challenges.
    private func printOCRA(_ enrolled: EnrollResponse, _ context: CommandContext) {
        let token = enrolled.token
        let keyHex = Base32.decode(enrolled.secret).map { seed in seed.withUnsafeBytes { Hex.encode($0) } } ?? ""
        switch format {
        case .json:
            context.print(JSONOutput.object([("serial", .string(token.serial)), ("user", .string(user)), ("kind", .string("ocra")),
                                    ("suite", .string(token.suite ?? "")), ("secret", .string(enrolled.secret)), ("key_hex", .string(keyHex))]).rendered)
        case .text:
            context.print("Enrolled OCRA token \(token.serial) for \(user), suite \(token.suite ?? "").")
            context.print("Key (hex):    \(keyHex)")
            context.print("Key (base32): \(Self.grouped(enrolled.secret))")
            context.print("\nLoad the key into the device that answers challenges. It is not shown again.")
        }
    }

    /// "ABCD EFGH …" is easier to type into a phone.
    static func grouped(_ secret: String) -> String {
        var out = ""
        for (index, character) in secret.enumerated() {
            if index > 0, index % 4 == 0 { out += " " }
            out.append(character)
        }
        return out
    }

    static func hostname() -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let ok = buffer.withUnsafeMutableBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { chars in chars.baseAddress.map { gethostname($0, chars.count - 1) == 0 } ?? false }
        }
        guard ok else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }
}
