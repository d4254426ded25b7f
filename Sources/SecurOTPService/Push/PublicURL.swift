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
        // Lenient where a person writes it (case, a trailing '/'), then the one rule (WebOrigin).
        var lower = Substring(text.lowercased())
        if lower.hasSuffix("/") { lower = lower.dropLast() }
        if let scheme = ["https://", "http://"].first(where: { lower.hasPrefix($0) }) {
            let rest = lower.dropFirst(scheme.count)
            guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@") else {
                return fail("expected only scheme://HOST[:PORT], no path, query or user")
            }
        }
        let parsed: WebOrigin
        switch WebOrigin.check(String(lower)) {
        case .success(let origin): parsed = origin
        case .failure(.tooLong): return fail("longer than 255 bytes")
        case .failure(.scheme): return fail("expected https://HOST[:PORT]")
        case .failure(.port): return fail("bad port (1-65535)")
        case .failure(.hostName): return fail("expected a host name (letters, digits, '-', '.'); an IP address is not a passkey RP id")
        case .failure(.ipAddress): return fail("an IP address is not a valid passkey RP id; use a host name (http://localhost:PORT for tests)")
        case .failure(.plainHTTP): return fail("plain http only for localhost (tests); use https")
        }
        let defaultPort = parsed.secure ? 443 : 80
        let shownPort = parsed.port.flatMap { $0 == defaultPort ? nil : $0 }
        let origin = (parsed.secure ? "https://" : "http://") + parsed.host + (shownPort.map { ":\($0)" } ?? "")
        return .success(PublicURL(origin: origin, rpID: parsed.host))
    }

    public var description: String { origin }

    /// Where `securotp device add --web` points the phone: the code in a fragment, so it never
    /// reaches a server log or a Referer.
    public func activationURL(code: String) -> String { origin + "/app/#enroll=" + code }

    /// 409 for a web device while `public_url` is unset.
    public static let unset = ServiceError(.conflict, "web devices need the validator's public_url; set public_url = https://HOST in securotpd.conf (docs/validator.md)")
}
