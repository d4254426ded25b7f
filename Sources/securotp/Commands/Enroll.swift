import ArgumentParser
import Glibc
import SecurOTPCore
import SecurOTPQR
import SecurOTPStore

struct Enroll: ParsableCommand {
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
        guard HashAlgorithm(name: algorithm) != nil else { throw ValidationError("--algorithm must be SHA1, SHA256 or SHA512 (got \(algorithm))") }
        guard OTP.digitRange.contains(digits) else { throw ValidationError("--digits must be 6, 7 or 8 (got \(digits))") }
        guard OTP.periodRange.contains(period) else { throw ValidationError("--period must be 1–300 seconds (got \(period))") }
        for (name, value) in [("--issuer", issuer), ("--label", label ?? "")] where value.contains(":") {
            throw ValidationError("\(name) may not contain ':' (it separates issuer and account in the QR code)")
        }
    }

    func run() throws {
        if let ocra { return try enrollOCRA(suiteText: ocra) }
        let context = try CommandContext(global)
        try Store.validate(user: user)
        if !CommandContext.userExists(user) {
            CommandContext.warn("no user \(user) is known to this system (getpwnam); enrolling anyway")
        }
        guard let hashAlgorithm = HashAlgorithm(name: algorithm) else { return }
        let parameters = OATHParameters(kind: hotp ? .hotp : .totp, algorithm: hashAlgorithm, digits: digits, period: period, counter: 0)
        // RFC 4226 §4 asks for at least 128 bits; use the hash's own output length.
        let seedLength = switch hashAlgorithm { case .sha1: 20; case .sha256: 32; case .sha512: 64 }
        guard let seed = SecretBytes.random(count: seedLength) else {
            throw CLIError(message: "no randomness available from getrandom(2)", exitCode: 71)
        }
        let store = try context.openStore(create: true)
        let record = try store.enroll(user: user, parameters: parameters, seed: seed, nickname: nickname,
                                      issuer: issuer, maxTokens: context.settings.maxTokens, now: CommandContext.now())
        let uri = OTPAuthURI(parameters: parameters, secret: seed, account: label ?? "\(user)@\(Self.hostname())", issuer: issuer).render()
        let qr = try? QRCode.encode(Array(uri.utf8), errorCorrection: .medium)
        if let path = qrPNG {
            guard let qr else { throw CLIError(message: "the URI is too long for a QR code", exitCode: 65) }
            try qr.png().withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try FileSecurity.writeSecret(path, bytes: bytes, replace: true)
            }
        }

        let secret = Base32.encode(seed)
        switch format {
        case .json:
            print(JSONValue.object([
                ("serial", .string(record.serial)),
                ("user", .string(user)),
                ("kind", .string(parameters.kind.rawValue)),
                ("algorithm", .string(hashAlgorithm.name)),
                ("digits", .number(Int64(digits))),
                ("period", hotp ? .null : .number(Int64(period))),
                ("counter", hotp ? .number(0) : .null),
                ("uri", .string(uri)),
                ("secret", .string(secret)),
                ("qr_png", qrPNG.map { .string($0) } ?? .null),
            ]).rendered)
        case .text:
            print("Enrolled \(parameters.kind.rawValue.uppercased()) token \(record.serial) for \(user).\n")
            if !noQR, let qr {
                print("Scan this QR code with an authenticator app:\n")
                print(qr.terminalString(quietZone: 2, invert: true))
            }
            print("URI:     \(uri)")
            print("Secret:  \(Self.grouped(secret))   (for manual entry; \(hashAlgorithm.name), \(digits) digits\(hotp ? ", counter 0" : ", \(period) s"))")
            if let path = qrPNG { print("QR PNG:  \(path)") }
            print("\nThis secret is not shown again. Test it before you log out: the code from the app is what the login asks for.")
        }
    }

    /// OCRA tokens have no otpauth URI: the key goes to the device that answers challenges.
    private func enrollOCRA(suiteText: String) throws {
        let suite: OCRASuite
        do { suite = try OCRASuite(suiteText) } catch { throw CLIError(message: "--ocra \(suiteText): \(error.message)", exitCode: 64) }
        let context = try CommandContext(global)
        try Store.validate(user: user)
        let keyLength = switch suite.algorithm { case .sha1: 20; case .sha256: 32; case .sha512: 64 }
        guard let seed = SecretBytes.random(count: keyLength) else { throw CLIError(message: "no randomness available", exitCode: 71) }
        let token = NewToken(kind: .ocra, parameters: OATHParameters(kind: .hotp, algorithm: suite.algorithm, digits: suite.digits),
                             seed: seed, nickname: nickname, issuer: issuer, suite: suite.text)
        let store = try context.openStore(create: true)
        let record = try store.add([token], user: user, maxTokens: context.settings.maxTokens, now: CommandContext.now())[0]
        let keyHex = seed.withUnsafeBytes { Hex.encode($0) }
        switch format {
        case .json:
            print(JSONValue.object([("serial", .string(record.serial)), ("user", .string(user)), ("kind", .string("ocra")),
                                    ("suite", .string(suite.text)), ("secret", .string(Base32.encode(seed))), ("key_hex", .string(keyHex))]).rendered)
        case .text:
            print("Enrolled OCRA token \(record.serial) for \(user), suite \(suite.text).")
            print("Key (hex):    \(keyHex)")
            print("Key (base32): \(Self.grouped(Base32.encode(seed)))")
            print("\nLoad the key into the device that answers challenges. It is not shown again.")
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
