import SecurOTPCore

/// The link `securotp device add` prints and shows as a QR code:
/// `securotp-activate:https://otp.example.com:8443?code=ABCD-EFGH-JKMN-PQRS` — the validator's
/// URL and the single-use activation code (docs/push.md, "Enrolling a device"). Parsed strictly:
/// a bounded length, printable ASCII, one `code` parameter and nothing else; the server is checked
/// again, like --server, when it is used.
public struct ActivationLink: Sendable, Equatable {
    public static let scheme = "securotp-activate:"
    public static let maxLength = 2048

    public let server: String
    public let code: String

    /// Whether `text` is meant as a link rather than a bare code.
    public static func isLink(_ text: String) -> Bool {
        text.utf8.count >= scheme.utf8.count && text.prefix(scheme.count).lowercased() == scheme
    }

    public init(_ text: String) throws(AuthenticatorError) {
        func refuse(_ why: String) -> AuthenticatorError {
            AuthenticatorError(.invalidInput, "not an activation link (\(why)): \(TerminalText.quoted(text)); expected "
                + "securotp-activate:https://HOST[:PORT]?code=ABCD-EFGH-JKMN-PQRS as securotp device add prints it")
        }
        guard text.utf8.count <= Self.maxLength else { throw refuse("longer than \(Self.maxLength) bytes") }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else { throw refuse("only printable ASCII without spaces") }
        guard Self.isLink(text) else { throw refuse("it does not start with \(Self.scheme)") }
        let rest = text.dropFirst(Self.scheme.count)
        let parts = rest.split(separator: "?", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw refuse("one ?code= expected") }
        let server = String(parts[0])
        let query = parts[1]
        guard query.hasPrefix("code="), !query.contains("&"), !query.contains("#") else { throw refuse("the only parameter is code=") }
        let code = String(query.dropFirst(5))
        guard (1...64).contains(code.count), code.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || ("A"..."Z").contains($0)
                                                                                 || ("a"..."z").contains($0) || $0 == "-" }) else {
            throw refuse("the code is letters, digits and dashes")
        }
        let lowered = server.lowercased()
        guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), server.split(separator: "/", omittingEmptySubsequences: false).count >= 3,
              !server.contains("@"), !server.contains("#") else {
            throw refuse("the server is https://HOST[:PORT]")
        }
        self.server = server
        self.code = code
    }

    /// The server to activate with: the link's, unless `option` (--server) names another.
    public func server(agreeingWith option: String?) throws(AuthenticatorError) -> String {
        guard let option else { return server }
        guard Self.normalized(option) == Self.normalized(server) else {
            throw AuthenticatorError(.invalidInput, "the activation link names the validator \(TerminalText.quoted(server)) but --server says "
                + "\(TerminalText.quoted(option)); drop --server, or ask your administrator which validator is right")
        }
        return server
    }

    /// Scheme and host compare without case; a trailing slash does not count.
    static func normalized(_ url: String) -> String {
        var url = Substring(url)
        while url.hasSuffix("/") { url = url.dropLast() }
        guard let separator = url.range(of: "://") else { return String(url) }
        let afterScheme = url[separator.upperBound...]
        let authorityEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        return url[..<authorityEnd].lowercased() + url[authorityEnd...]
    }
}
