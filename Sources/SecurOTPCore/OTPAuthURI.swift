/// The `otpauth://` key URI that authenticator apps read from a QR code
/// (Google Authenticator's "Key Uri Format").
public struct OTPAuthURI {
    public var parameters: OATHParameters
    public var secret: SecretBytes
    public var account: String
    /// From the `issuer=` parameter, else from the label prefix.
    public var issuer: String?
    /// The part of the label before ':' (may differ from `issuer` in foreign URIs).
    public var issuerLabelPrefix: String?

    public init(parameters: OATHParameters, secret: SecretBytes, account: String, issuer: String?) {
        self.parameters = parameters
        self.secret = secret
        self.account = account
        self.issuer = issuer
        issuerLabelPrefix = issuer
    }

    /// `otpauth://TYPE/ISSUER:ACCOUNT?secret=...&issuer=...` plus every parameter that differs
    /// from the default (algorithm SHA1, 6 digits, period 30); `counter` always for HOTP.
    ///
    /// `parse` splits the label at its first ':' (literal or %3A), so the label carries the
    /// issuer only when the issuer has no ':' of its own (the issuer= parameter always carries
    /// it), and an account with a ':' always gets a prefix, empty if need be: what `parse`
    /// returned renders to a URI that parses back to the same token.
    public func render() -> String {
        var label = Self.percentEncode(account)
        func hasColon(_ text: String) -> Bool { text.utf8.contains(UInt8(ascii: ":")) }
        let labelIssuer = issuer.flatMap { $0.isEmpty || hasColon($0) ? nil : $0 } ?? (hasColon(account) ? "" : nil)
        if let labelIssuer { label = Self.percentEncode(labelIssuer) + ":" + label }
        var uri = "otpauth://\(parameters.kind.rawValue)/\(label)?secret=\(Base32.encode(secret))"
        if let issuer, !issuer.isEmpty { uri += "&issuer=" + Self.percentEncode(issuer) }
        if parameters.algorithm != .sha1 { uri += "&algorithm=" + parameters.algorithm.name }
        if parameters.digits != 6 { uri += "&digits=\(parameters.digits)" }
        switch parameters.kind {
        case .totp: if parameters.period != 30 { uri += "&period=\(parameters.period)" }
        case .hotp: uri += "&counter=\(parameters.counter)"
        }
        return uri
    }

    public static func parse(_ text: String) throws(OTPAuthError) -> OTPAuthURI {
        let bytes = Array(text.utf8)
        let scheme = Array("otpauth://".utf8)
        guard bytes.count > scheme.count,
              Array(bytes.prefix(scheme.count)).map(lowercased) == scheme
        else { throw .init("not an otpauth:// URI") }
        var rest = Array(bytes.dropFirst(scheme.count))

        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { throw .init("missing label after the type") }
        let typeText = String(decoding: rest[..<slash].map(lowercased), as: UTF8.self)
        guard let kind = OATHKind(rawValue: typeText) else { throw .init("type must be totp or hotp (got \"\(typeText)\")") }
        rest = Array(rest[(slash + 1)...])

        let question = rest.firstIndex(of: UInt8(ascii: "?")) ?? rest.endIndex
        guard let label = percentDecode(rest[..<question]) else { throw .init("label is not valid percent-encoded UTF-8") }
        let (labelIssuer, account) = splitLabel(label)
        guard !account.isEmpty else { throw .init("label has no account name") }

        var parameters = OATHParameters(kind: kind)
        var secret: SecretBytes?
        var issuer: String?
        var sawCounter = false
        let query = question < rest.endIndex ? Array(rest[(question + 1)...]) : []
        for pair in query.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(decoding: parts[0].map(lowercased), as: UTF8.self)
            guard parts.count == 2, let value = percentDecode(parts[1]) else { throw .init("parameter \(name) has no valid value") }
            switch name {
            case "secret":
                guard let decoded = Base32.decode(value), decoded.count > 0 else { throw .init("secret is not valid base32") }
                secret = decoded
            case "issuer": issuer = value
            case "algorithm":
                guard let algorithm = HashAlgorithm(name: value) else { throw .init("algorithm must be SHA1, SHA256 or SHA512 (got \"\(value)\")") }
                parameters.algorithm = algorithm
            case "digits":
                guard let digits = Int(value), OTP.digitRange.contains(digits) else { throw .init("digits must be 6, 7 or 8 (got \"\(value)\")") }
                parameters.digits = digits
            case "period":
                guard let period = Int(value), OTP.periodRange.contains(period) else { throw .init("period must be 1–300 seconds (got \"\(value)\")") }
                parameters.period = period
            case "counter":
                guard let counter = UInt64(value) else { throw .init("counter must be a non-negative integer (got \"\(value)\")") }
                parameters.counter = counter
                sawCounter = true
            default: continue // image=, color= and other app extensions carry no key material
            }
        }
        guard let secret else { throw .init("missing secret= parameter") }
        if kind == .hotp, !sawCounter { throw .init("hotp URI without counter= parameter") }
        var uri = OTPAuthURI(parameters: parameters, secret: secret, account: account, issuer: issuer ?? labelIssuer)
        uri.issuerLabelPrefix = labelIssuer
        return uri
    }

    /// A decoded label, `ISSUER:ACCOUNT` or `ACCOUNT`, split at its first ':' byte (a Character
    /// search would miss a ':' that a combining mark joins into one grapheme with what follows).
    /// Spaces may precede the account name; they are never part of it, with or without an
    /// issuer prefix, so a rendered label reads back the same.
    public static func splitLabel(_ label: String) -> (issuer: String?, account: String) {
        var account = label.utf8[...]
        var issuer: String?
        if let colon = label.utf8.firstIndex(of: UInt8(ascii: ":")) {
            issuer = String(decoding: label.utf8[..<colon], as: UTF8.self)
            account = label.utf8[label.utf8.index(after: colon)...]
        }
        return (issuer, String(decoding: account.drop(while: { $0 == UInt8(ascii: " ") }), as: UTF8.self))
    }

    // MARK: percent-encoding (RFC 3986 unreserved characters stay literal)

    static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "@"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func percentDecode(_ bytes: some Collection<UInt8>) -> String? {
        let input = Array(bytes)
        var out = [UInt8]()
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "%") {
                guard index + 2 < input.count, let value = Hex.decode(String(decoding: input[(index + 1)...(index + 2)], as: UTF8.self)),
                      let byte = value.first
                else { return nil }
                out.append(byte)
                index += 3
            } else {
                out.append(input[index])
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
    private func lowercased(_ byte: UInt8) -> UInt8 { Self.lowercased(byte) }
}

/// Why an otpauth URI was refused.
public struct OTPAuthError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
