import CHTTP
import Foundation
import SecurOTPCore

/// The device's side of the validator's HTTP API (docs/push.md, "Devices"), over the same
/// libcurl client (CHTTP) the module and `securotp --server` use: TLS 1.2+ with verification
/// always on, no redirects, no proxies, bounded answers. Synchronous: the authenticator is a
/// command-line tool doing one request at a time.
public struct DeviceConnection: Sendable {
    public let server: String
    public let caFile: String?

    /// `server` is https://HOST[:PORT], or http:// to a loopback address only (tests, a
    /// validator on the same machine).
    public init(server: String, caFile: String?) throws(AuthenticatorError) {
        var trimmed = server
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard trimmed.hasPrefix("https://") || (trimmed.hasPrefix("http://") && Self.isLoopback(trimmed)) else {
            throw AuthenticatorError(.invalidInput, "--server must be https://HOST[:PORT] (plain http:// only to 127.0.0.1, [::1] or localhost); got \(TerminalText.quoted(server))")
        }
        self.server = trimmed
        self.caFile = caFile.flatMap { $0.isEmpty ? nil : $0 }
    }

    static func isLoopback(_ url: String) -> Bool {
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host: Substring
        if authority.hasPrefix("[") {
            host = authority.dropFirst().prefix { $0 != "]" }
        } else {
            host = authority.prefix { $0 != ":" }
        }
        return LoopbackHost.contains(String(host))
    }

    /// An HTTP answer: status and body. Transport failures throw.
    public struct Answer: Sendable {
        public let status: Int
        public let body: Data
    }

    /// The largest answer read: a list of pending requests, each bounded by the validator.
    static let maxResponse = 1 << 20

    /// POSTs `body` (JSON) to `path` with the device credential (nil: activation, whose code is
    /// the credential). `timeoutSeconds` bounds the whole request, long-polls included.
    public func post(_ path: APIPath, _ body: [String: Any], credential: SecretBytes?, timeoutSeconds: Int = 15) throws(AuthenticatorError) -> Answer {
        let payload: [UInt8]
        do {
            payload = Array(try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]))
        } catch {
            throw AuthenticatorError(.system, "cannot encode the request to \(path): \(error)")
        }
        // The bearer as a C string in a wiped buffer: the credential is a secret.
        let bearer = SecretBytes(count: (credential?.count ?? 0) + 1)
        if let credential {
            bearer.withUnsafeMutableBytes { out in credential.withUnsafeBytes { for index in $0.indices { out[index] = $0[index] } } }
        }
        let url = server + path.template
        var response = securotp_http_response()
        let rc = url.withCString { url in "POST".withCString { method in
            bearer.withUnsafeBytes { bearerBytes in
                bearerBytes.withMemoryRebound(to: CChar.self) { bearerText in
                    withOptionalCString(caFile) { ca in
                        payload.withUnsafeBufferPointer { bytes in
                            var request = securotp_http_request(method: method, url: url, bearer: credential == nil ? nil : bearerText.baseAddress,
                                                                ca_file: ca, client_cert: nil, client_key: nil,
                                                                body: bytes.baseAddress, body_length: bytes.count,
                                                                timeout_ms: timeoutSeconds * 1000, max_response: Self.maxResponse)
                            return securotp_http_perform(&request, &response)
                        }
                    }
                }
            }
        } }
        defer { securotp_http_response_free(&response) }
        guard rc == 0 else {
            let reason = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw AuthenticatorError(.unavailable, "cannot reach the validator at \(server): \(TerminalText.escaped(reason))")
        }
        let data = response.body.map { Data(bytes: $0, count: response.body_length) } ?? Data()
        return Answer(status: response.status, body: data)
    }

    /// Like `post`, but a status outside 2xx is an error carrying the validator's message, and
    /// the answer must be a JSON object (an empty body is an empty object).
    public func call(_ path: APIPath, _ body: [String: Any], credential: SecretBytes?, timeoutSeconds: Int = 15) throws(AuthenticatorError) -> [String: Any] {
        let answer = try post(path, body, credential: credential, timeoutSeconds: timeoutSeconds)
        let object: [String: Any]? = answer.body.isEmpty ? [:] : (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any]
        guard (200..<300).contains(answer.status) else {
            let message = ((object?["error"] as? [String: Any])?["message"] as? String).map { TerminalText.excerpt($0, maxScalars: 300) }
            throw AuthenticatorError(Self.code(status: answer.status),
                                     "the validator at \(server) refused \(path) (HTTP \(answer.status))" + (message.map { ": \($0)" } ?? ""))
        }
        guard let object else { throw AuthenticatorError(.unavailable, "unexpected answer from the validator at \(server) (\(path)): not a JSON object") }
        return object
    }

    static func code(status: Int) -> AuthenticatorError.Code {
        switch status {
        case 401, 403: .refused
        case 404: .notFound
        // Over the device's rate or its share of waits (docs/push.md, "Limits are rates"): try later.
        case 429: .unavailable
        default: status >= 500 ? .unavailable : .invalidInput
        }
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
