import SecurOTPCore

/// `public_url` (securotpd.conf, docs/push.md "Phones without an app"): the validator's address
/// as phones' browsers see it. Its host name is the passkeys' RP id, its scheme://host[:port]
/// their origin. HTTPS, or plain HTTP only to `localhost` or a loopback address (a browser
/// treats loopback HTTP as a secure context; tests use it).
public struct PublicURL: Sendable, Equatable, CustomStringConvertible {
    /// scheme://host[:port], lowercase, no path: what a browser writes as `origin`.
    public let origin: String
    /// The host name alone: the WebAuthn RP id.
    public let rpID: String

    /// nil, with why, for anything else: a path other than `/`, a query, user info, an IP
    /// address over HTTPS (not a valid RP id), characters outside a host name.
    public static func parse(_ text: String) -> Result<PublicURL, ServiceError> {
        func fail(_ why: String) -> Result<PublicURL, ServiceError> {
            .failure(ServiceError(.config, "public_url: \(why) (got \(TerminalText.quoted(text))); e.g. https://otp.example.com"))
        }
        guard text.utf8.count <= 255 else { return fail("longer than 255 bytes") }
        let lower = text.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") { scheme = "https" } else if lower.hasPrefix("http://") { scheme = "http" } else {
            return fail("expected https://HOST[:PORT]")
        }
        var rest = Substring(lower.dropFirst(scheme.count + 3))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@") else {
            return fail("expected only scheme://HOST[:PORT], no path, query or user")
        }
        var host = rest
        var port: Int?
        if let colon = rest.lastIndex(of: ":"), !rest.hasPrefix("[") {
            host = rest[..<colon]
            guard let number = Int(rest[rest.index(after: colon)...]), (1...65535).contains(number) else { return fail("bad port") }
            port = number
        }
        guard !host.isEmpty, host.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x2e }),
              !host.hasPrefix("."), !host.hasSuffix("."), !host.hasPrefix("-")
        else { return fail("expected a host name (letters, digits, '-', '.'); an IP address is not a passkey RP id") }
        let loopback = host == "localhost" || host.hasSuffix(".localhost")
        let isAddress = host.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2e }
        if isAddress { return fail("an IP address is not a valid passkey RP id; use a host name (http://localhost:PORT for tests)") }
        if scheme == "http", !loopback { return fail("plain http only for localhost (tests); use https") }
        let defaultPort = scheme == "https" ? 443 : 80
        let shownPort = port.flatMap { $0 == defaultPort ? nil : $0 }
        let origin = scheme + "://" + host + (shownPort.map { ":\($0)" } ?? "")
        return .success(PublicURL(origin: origin, rpID: String(host)))
    }

    public var description: String { origin }

    /// Where `securotp device add --web` points the phone: the code in a fragment, so it never
    /// reaches a server log or a Referer.
    public func activationURL(code: String) -> String { origin + "/app/#enroll=" + code }

    /// 409 for a web device while `public_url` is unset.
    public static let unset = ServiceError(.conflict, "web devices need the validator's public_url; set public_url = https://HOST in securotpd.conf (docs/validator.md)")
}
