import CHTTP
import COpenSSL
import CPosix
import SecurOTPCore
import SecurOTPStore

/// The requests one login makes to a securotpd validator: POST with a JSON body, answer parsed
/// by JSONReader. HTTP goes through CHTTP — libcurl loaded with dlopen on first use (local mode
/// never loads it), one synchronous transfer per call, no threads, no signals, TLS 1.2+ with
/// verification always on.
struct ValidatorClient {
    let address: ValidatorAddress
    private let settings: ValidatorSettings
    /// `sotp_h_…` plus a NUL for C: read from `host_credential` for each login, wiped after.
    private let credential: SecretBytes
    /// The hash of the credential's secret, as the validator stores it: the key of this host's
    /// offline code hashes and of its offline cache files.
    let pepper: [UInt8]

    /// Reads the host credential and checks the TLS files, as carefully as the store's files.
    /// Failures are the admin's to fix, never the validator's absence: they are not subject to
    /// failmode.
    init(_ settings: ValidatorSettings) throws(StoreError) {
        guard let address = settings.address, let file = settings.hostCredential else {
            throw StoreError(.config, "validator and host_credential must both be set")
        }
        self.address = address
        self.settings = settings
        credential = try Self.readCredential(file)
        pepper = Self.pepper(credential)
        if let caFile = settings.caFile { try FileSecurity.check(caFile, .policy) }
        if let certificate = settings.clientCertificate { try FileSecurity.check(certificate, .policy) }
        if let key = settings.clientKey { try FileSecurity.check(key, .secret) }
    }

    /// The credential's first line, trimmed: `sotp_h_<16 hex>_<64 hex>`.
    private static func readCredential(_ file: String) throws(StoreError) -> SecretBytes {
        var contents = try FileSecurity.contents(of: file, .secret, maxSize: 4096)
        defer { contents.withUnsafeMutableBytes { securotp_cleanse($0.baseAddress, $0.count) } }
        var start = 0
        while start < contents.count, contents[start] == 0x20 || contents[start] == 0x09 { start += 1 }
        var end = start
        while end < contents.count, contents[end] != 0x0a, contents[end] != 0x0d { end += 1 }
        while end > start, contents[end - 1] == 0x20 || contents[end - 1] == 0x09 { end -= 1 }
        let credential = SecretBytes(count: end - start + 1) // + NUL
        let wellFormed = credential.withUnsafeMutableBytes { out in
            for index in start..<end { out[index - start] = contents[index] }
            return isHostCredential(UnsafeBufferPointer(rebasing: out[..<(end - start)]))
        }
        guard wellFormed else {
            throw StoreError(.invalidInput, "\(file) holds no host credential (expected one line sotp_h_…); make one on the validator with: securotp host add NAME --output FILE")
        }
        return credential
    }

    /// HostCredentialHash of the secret: the last 64 hex digits, decoded into wiped memory.
    private static func pepper(_ credential: SecretBytes) -> [UInt8] {
        let secret = SecretBytes(count: 32)
        credential.withUnsafeBytes { text in
            secret.withUnsafeMutableBytes { out in
                let hex = text.count - 1 - 64 // before the NUL
                for index in 0..<32 {
                    out[index] = nibble(text[hex + 2 * index]) << 4 | nibble(text[hex + 2 * index + 1])
                }
            }
        }
        return secret.withUnsafeBytes { HostCredentialHash.of(secret: $0) }
    }

    /// A lowercase hex digit's value (the credential was checked to hold only those).
    private static func nibble(_ byte: UInt8) -> UInt8 {
        byte <= 0x39 ? byte - 0x30 : byte - 0x61 + 10
    }

    private static func isHostCredential(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        let prefix = Array("sotp_h_".utf8)
        guard text.count == prefix.count + 16 + 1 + 64 else { return false }
        for (index, byte) in text.enumerated() {
            switch index {
            case 0..<prefix.count: if byte != prefix[index] { return false }
            case prefix.count + 16: if byte != UInt8(ascii: "_") { return false }
            default: if !((byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)) { return false }
            }
        }
        return true
    }

    /// A C string that lives as long as the program (the request keeps only its address).
    private static var method: UnsafePointer<CChar> {
        UnsafeRawPointer(("POST" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// POST `body` to `path` (`APIPath.verify`): the answer, a JSON object. The body is the
    /// caller's to wipe. `seconds`: how long the request may take (default `timeout=`); a
    /// long-poll (`/v1/push/wait`) passes its own bound, the wait plus `timeout=`.
    func post(_ path: APIPath, _ body: SecretBytes, seconds: Int? = nil) throws(ValidatorFailure) -> JSONValue {
        let timeoutMilliseconds = (seconds ?? settings.timeout) * 1000
        var response = securotp_http_response()
        defer { securotp_http_response_free(&response) }
        var rc = perform(path, body, &response, timeoutMilliseconds: timeoutMilliseconds)
        // Nothing was sent (connection refused): a validator restarting closes its port for a
        // fraction of a second (docs/validator.md, "Restarts and upgrades"). Try again a few
        // times within the timeout; never after a request went out, which could act twice.
        var waited = 0
        for delay in Self.reconnectDelays where rc == Int32(SECUROTP_HTTP_NOT_CONNECTED) {
            guard waited + delay < settings.timeout * 1000 else { break }
            Self.sleep(milliseconds: delay)
            waited += delay
            securotp_http_response_free(&response)
            response = securotp_http_response()
            rc = perform(path, body, &response, timeoutMilliseconds: timeoutMilliseconds)
        }
        guard rc == 0 else {
            let reason = withUnsafeBytes(of: response.error) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
            throw .unavailable(ValidatorText.loggable(reason))
        }
        return try Self.answer(response)
    }

    /// Milliseconds to wait before each new connection attempt: 0.75 s in all, several times
    /// the gap a restart of securotpd leaves (under 0.1 s measured), and short enough that a
    /// validator that is really down delays offline codes or failmode only a little.
    static let reconnectDelays = [50, 100, 200, 400]

    private static func sleep(milliseconds: Int) {
        var delay = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var left = timespec()
        while nanosleep(&delay, &left) != 0, securotp_errno() == EINTR { delay = left }
    }

    /// One transfer.
    private func perform(_ path: APIPath, _ body: SecretBytes, _ response: inout securotp_http_response, timeoutMilliseconds: Int) -> Int32 {
        address.url(path.template).withCString { (url: UnsafePointer<CChar>) -> Int32 in
            withOptionalCString(settings.caFile) { (caFile: UnsafePointer<CChar>?) -> Int32 in
                withOptionalCString(settings.clientCertificate) { (certificate: UnsafePointer<CChar>?) -> Int32 in
                    withOptionalCString(settings.clientKey) { (key: UnsafePointer<CChar>?) -> Int32 in
                        credential.withUnsafeBytes { (bearer: UnsafeBufferPointer<UInt8>) -> Int32 in
                            body.withUnsafeBytes { (bytes: UnsafeBufferPointer<UInt8>) -> Int32 in
                                var request = securotp_http_request()
                                request.method = Self.method
                                request.url = url
                                request.bearer = UnsafeRawPointer(bearer.baseAddress)?.assumingMemoryBound(to: CChar.self)
                                request.ca_file = caFile
                                request.client_cert = certificate
                                request.client_key = key
                                request.body = bytes.baseAddress
                                request.body_length = bytes.count
                                request.timeout_ms = timeoutMilliseconds
                                return securotp_http_perform(&request, &response)
                            }
                        }
                    }
                }
            }
        }
    }

    /// The validator's answer: the JSON object of a 2xx, else the failure its status means.
    private static func answer(_ response: securotp_http_response) throws(ValidatorFailure) -> JSONValue {
        let answer = response.body.flatMap { JSONReader.parse(UnsafeBufferPointer(start: $0, count: response.body_length)) }
        let status = response.status
        switch status {
        case 204 where response.body_length == 0: // a report taken (/v1/push/result)
            return .object([])
        case 200, 201: // 201: a push request was made
            guard let answer, answer.isObject else { throw .unavailable("unreadable answer (not a JSON object)") }
            return answer
        case 401: throw .credentialRefused(Self.message(answer, status: status))
        case 403: throw .forbidden(Self.message(answer, status: status))
        case 429: throw .rateLimited(Self.message(answer, status: status))
        case 400..<500: throw .refused(status: status, Self.message(answer, status: status))
        default: throw .unavailable("HTTP \(status): \(Self.message(answer, status: status))")
        }
    }

    /// The error envelope's message, made safe for a log line.
    private static func message(_ answer: JSONValue?, status: Int) -> String {
        guard let message = answer?["error"]?["message"]?.string else { return "HTTP \(status) without an error message" }
        return ValidatorText.loggable(message)
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString(body)
}

/// Why a request brought no usable answer.
enum ValidatorFailure: Error {
    /// Transport, TLS, timeout, 5xx or an unreadable answer: failmode decides.
    case unavailable(String)
    /// 401: the host credential is unknown, revoked or malformed. Never failmode=safe.
    case credentialRefused(String)
    /// 403: the user is outside this host's users or groups.
    case forbidden(String)
    /// 429: too many requests for this host or user.
    case rateLimited(String)
    /// Another 4xx: the validator refused the request itself.
    case refused(status: Int, String)
}

extension ValidatorFailure {
    /// The validator answered and said no (4xx): not its absence.
    var isRefusal: Bool {
        if case .unavailable = self { return false }
        return true
    }

    /// What the log says about it (the validator's words were cleaned when read).
    var logText: String {
        switch self {
        case .unavailable(let reason): reason
        case .credentialRefused(let message): "credential refused: \(message)"
        case .forbidden(let message): "forbidden: \(message)"
        case .rateLimited(let message): "rate-limited: \(message)"
        case .refused(let status, let message): "HTTP \(status): \(message)"
        }
    }
}
