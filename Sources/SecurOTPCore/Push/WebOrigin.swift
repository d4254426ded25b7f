/// The one rule for a phone passkey's origin (docs/push.md "Phones without an app"), shared by
/// the validator's `public_url`, the module's `web_origin=` and the origin an approval names:
/// `https://HOST[:PORT]`, or `http://localhost[:PORT]` for tests (loopback HTTP is a secure
/// context). HOST is a host name of lowercase letters, digits, '-' and '.', not starting with
/// '-' or '.' nor ending with '.', and not an IPv4 address (an IP address is not a valid RP id);
/// PORT is 1–65535 written without a leading zero; at most 255 bytes, nothing after the port.
/// It reads the form browsers write (lowercase, no path); callers normalize before.
public struct WebOrigin: Sendable, Equatable {
    public let secure: Bool
    /// The host name: the passkeys' RP id.
    public let host: String
    public let port: Int?

    /// Why a text is not an origin (PublicURL names it in its message).
    public enum Problem: Error, Sendable, Equatable {
        case tooLong, scheme, port, hostName, ipAddress, plainHTTP
    }

    public static func parse(_ text: String) -> WebOrigin? {
        if case .success(let origin) = check(text) { return origin }
        return nil
    }

    public static func check(_ text: String) -> Result<WebOrigin, Problem> {
        let bytes = Array(text.utf8)
        guard bytes.count <= 255 else { return .failure(.tooLong) }
        let https = Array("https://".utf8), http = Array("http://".utf8)
        let secure: Bool
        var index: Int
        if bytes.starts(with: https) { secure = true; index = https.count } else if bytes.starts(with: http) { secure = false; index = http.count } else {
            return .failure(.scheme)
        }
        var host: [UInt8] = []
        while index < bytes.count, bytes[index] != 0x3a {
            let byte = bytes[index]
            guard isHostByte(byte) else { return .failure(.hostName) }
            host.append(byte)
            index += 1
        }
        var port: Int?
        if index < bytes.count {
            let digits = bytes[(index + 1)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.first != 0x30 else { return .failure(.port) }
            let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard value <= 65535 else { return .failure(.port) }
            port = value
        }
        guard !host.isEmpty, host.first != 0x2e, host.first != 0x2d, host.last != 0x2e,
              let name = String(validating: host, as: UTF8.self) else { return .failure(.hostName) }
        if host.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2e }) { return .failure(.ipAddress) }
        guard secure || name == "localhost" else { return .failure(.plainHTTP) }
        return .success(WebOrigin(secure: secure, host: name, port: port))
    }

    /// Lowercase letters, digits, '-', '.'.
    public static func isHostByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2d || byte == 0x2e
    }
}
