import CHTTP
import Foundation
import SecurOTPCore
import SecurOTPStore

/// A TokenService answered by a remote securotpd over HTTPS: `securotp --server URL
/// --credential FILE` runs every command through the /v1 API with the same output as against
/// the local store. Requests go through libcurl (CHTTP), the client the PAM module uses too.
public final class RemoteTokenService: TokenService {
    public let storeKind = "remote"
    /// https://host:port (no trailing slash), or unix:/path/to/socket.
    public let server: String
    private let credential: String
    private let caFile: String?
    private let clientCertificate: String?
    private let clientKey: String?
    private let timeoutMilliseconds: Int

    /// `credentialFile` holds an admin credential (owner-only, like every secret securotp reads);
    /// `clientCertificate` and `clientKey` answer a validator that requires mutual TLS.
    public init(server: String, credentialFile: String?, caFile: String?, clientCertificate: String? = nil, clientKey: String? = nil,
                timeoutSeconds: Int = 15) throws(ServiceError) {
        guard server.hasPrefix("https://") || server.hasPrefix("http://") || server.hasPrefix("unix:/") else {
            throw ServiceError(.invalidInput, "--server must be https://HOST:PORT (or http:// on loopback, or unix:/PATH); got \(server)")
        }
        guard let credentialFile else {
            throw ServiceError(.invalidInput, "--server needs --credential FILE (or SECUROTP_CREDENTIAL) with an admin credential; make one with: securotp admin add NAME")
        }
        let bytes: [UInt8]
        do throws(StoreError) {
            bytes = try FileSecurity.contents(of: credentialFile, .secret, maxSize: 4096)
        } catch {
            throw ServiceError(error)
        }
        guard let parsed = Credential.parseFile(bytes) else {
            throw ServiceError(.invalidInput, "\(credentialFile) holds no securotp credential (expected one line sotp_a_… or sotp_h_…)")
        }
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        credential = parsed.text
        self.caFile = caFile
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
        timeoutMilliseconds = timeoutSeconds * 1000
    }

    // MARK: transport

    struct Empty: Codable {}

    func call<Response: Decodable>(_ method: String, _ path: String, _ body: (some Encodable)? = nil as Empty?,
                                           as: Response.Type = Response.self) async throws(ServiceError) -> Response {
        let payload: [UInt8]
        do {
            payload = try body.map { Array(try APICoding.encoder().encode($0)) } ?? []
        } catch {
            throw ServiceError(.system, "cannot encode the request: \(error)")
        }
        let url = server.hasPrefix("unix:") ? "\(server) \(path)" : server + path
        let hasBody = body != nil
        // libcurl blocks: run it on a thread of its own, never on one of Swift's cooperative
        // threads (with two cores there are two, and the validator in the same process — the
        // tests — needs them).
        var (rc, response) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int32, securotp_http_response), Never>) in
            Self.transfers.async { [self] in
                var response = securotp_http_response()
                let rc = perform(method: method, url: url, payload: payload, hasBody: hasBody, into: &response)
                continuation.resume(returning: (rc, response))
            }
        }
        defer { securotp_http_response_free(&response) }
        guard rc == 0 else {
            let reason = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw ServiceError(.unavailable, "cannot reach the validator at \(server): \(reason)")
        }
        let data = response.body.map { Data(bytes: $0, count: response.body_length) } ?? Data()
        guard (200..<300).contains(response.status) else {
            if let envelope = try? APICoding.decoder().decode(ErrorEnvelope.self, from: data) {
                throw ServiceError(ServiceError.Code(rawValue: envelope.error.code) ?? Self.code(status: response.status), envelope.error.message)
            }
            throw ServiceError(Self.code(status: response.status), "the validator at \(server) answered HTTP \(response.status)")
        }
        if Response.self == Empty.self, let empty = Empty() as? Response { return empty }
        do {
            return try APICoding.decoder().decode(Response.self, from: data)
        } catch {
            throw ServiceError(.system, "unexpected answer from the validator at \(server) (\(path)): \(error)")
        }
    }

    /// The largest answer read: an audit listing of 10,000 entries, each bounded by the
    /// validator (AuditEntry.bounded), fits; the PAM module keeps CHTTP's 1 MiB.
    static let maxResponse = 64 * 1024 * 1024

    private static let transfers = DispatchQueue(label: "securotp.http", attributes: .concurrent)

    private func perform(method: String, url: String, payload: [UInt8], hasBody: Bool, into response: inout securotp_http_response) -> Int32 {
        url.withCString { url in
            method.withCString { method in
                credential.withCString { bearer in
                    withOptionalCString(caFile) { ca in
                        withOptionalCString(clientCertificate) { certificate in
                            withOptionalCString(clientKey) { key in
                                payload.withUnsafeBufferPointer { bytes in
                                    var request = securotp_http_request(method: method, url: url, bearer: bearer, ca_file: ca,
                                                                        client_cert: certificate, client_key: key,
                                                                        body: hasBody ? bytes.baseAddress : nil,
                                                                        body_length: bytes.count, timeout_ms: timeoutMilliseconds,
                                                                        max_response: Self.maxResponse)
                                    return securotp_http_perform(&request, &response)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    func send(_ method: String, _ path: String, _ body: (some Encodable)? = nil as Empty?) async throws(ServiceError) {
        let _: Empty = try await call(method, path, body)
    }

    static func code(status: Int) -> ServiceError.Code {
        switch status {
        case 400: .invalidInput
        case 401: .unauthorized
        case 403: .forbidden
        case 404: .notFound
        case 409: .conflict
        case 422: .importInvalid
        case 429: .rateLimited
        case 501: .notSupported
        case 503: .unavailable
        default: .system
        }
    }

    /// A path segment: user names and serials are percent-encoded.
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }

    /// `path` with its `{name}` parameters filled, each value percent-encoded as one segment.
    static func path(_ path: APIPath, _ values: [String: String] = [:], query: [(String, String)] = []) -> String {
        let filled = path.template.split(separator: "/", omittingEmptySubsequences: false).map { part -> String in
            guard part.hasPrefix("{"), part.hasSuffix("}") else { return String(part) }
            guard let value = values[String(part.dropFirst().dropLast())] else { preconditionFailure("\(path) needs \(part)") }
            return segment(value)
        }.joined(separator: "/")
        return query.isEmpty ? filled : filled + "?" + query.map { "\($0.0)=\(segment($0.1))" }.joined(separator: "&")
    }

    private static func token(_ path: APIPath, _ user: String, _ serial: String) -> String { Self.path(path, ["user": user, "serial": serial]) }

    // MARK: hosts

    public func preflight(_ request: PreflightRequest, caller: Caller) async throws(ServiceError) -> PreflightResponse {
        try await call("POST", Self.path(.preflight), request)
    }

    public func verify(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        try await call("POST", Self.path(.verify), request)
    }

    public func answer(_ request: AnswerRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        try await call("POST", Self.path(.verifyAnswer), request)
    }

    // MARK: tokens

    public func enroll(user: String, _ request: EnrollRequest, caller: Caller) async throws(ServiceError) -> EnrollResponse {
        try await call("POST", Self.path(.userTokens, ["user": user]), request)
    }

    public func importTokens(user: String, _ request: ImportRequest, caller: Caller) async throws(ServiceError) -> TokenList {
        try await call("POST", Self.path(.userTokensImport, ["user": user]), request)
    }

    public func addFido(user: String, _ request: FidoAddRequest, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        try await call("POST", Self.path(.userFido, ["user": user]), request)
    }

    public func fidoCredentials(user: String, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        try await call("GET", Self.path(.userFido, ["user": user]))
    }

    public func methodPolicies(caller: Caller) async throws(ServiceError) -> MethodPolicyList {
        try await call("GET", Self.path(.policies))
    }

    public func setMethodPolicy(subject: String, _ request: MethodPolicyRequest, caller: Caller) async throws(ServiceError) -> MethodPolicyInfo {
        try await call("PUT", Self.path(.policy, ["subject": subject]), request)
    }

    public func clearMethodPolicy(subject: String, caller: Caller) async throws(ServiceError) {
        try await send("DELETE", Self.path(.policy, ["subject": subject]))
    }

    public func tokens(user: String?, caller: Caller) async throws(ServiceError) -> TokenList {
        try await call("GET", Self.path(.tokens, query: user.map { [("user", $0)] } ?? []))
    }

    public func setNickname(user: String, serial: String, _ request: NicknameRequest, caller: Caller) async throws(ServiceError) {
        try await send("PATCH", Self.token(.userToken, user, serial), request)
    }

    public func deleteToken(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await send("DELETE", Self.token(.userToken, user, serial))
    }

    public func reset(user: String, caller: Caller) async throws(ServiceError) -> ResetResponse {
        try await call("DELETE", Self.path(.userTokens, ["user": user]))
    }

    public func unlock(user: String, caller: Caller) async throws(ServiceError) -> UnlockResponse {
        try await call("POST", Self.path(.userUnlock, ["user": user]))
    }

    public func setPIN(user: String, serial: String, _ request: PINRequest, caller: Caller) async throws(ServiceError) {
        try await send("PUT", Self.token(.userTokenPIN, user, serial), request)
    }

    public func clearPIN(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await send("DELETE", Self.token(.userTokenPIN, user, serial))
    }

    public func requirePIN(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await send("POST", Self.token(.userTokenPINRequire, user, serial))
    }

    public func resync(user: String, serial: String, _ request: ResyncRequest, caller: Caller) async throws(ServiceError) -> ResyncResponse {
        try await call("POST", Self.token(.userTokenResync, user, serial), request)
    }

    public func recoveryCodes(user: String, _ request: RecoveryCodesRequest, caller: Caller) async throws(ServiceError) -> RecoveryCodesResponse {
        try await call("POST", Self.path(.userRecoveryCodes, ["user": user]), request)
    }

    public func bindingID(user: String, caller: Caller) async throws(ServiceError) -> BindingIDResponse {
        try await call("GET", Self.path(.userBindingID, ["user": user]))
    }

    public func status(caller: Caller) async throws(ServiceError) -> StatusResponse {
        try await call("GET", Self.path(.status))
    }

    // MARK: access

    private static func collection(_ kind: CredentialKind) -> APIPath { kind == .host ? .hosts : .admins }
    private static func member(_ kind: CredentialKind) -> APIPath { kind == .host ? .host : .admin }

    public func addCredential(kind: CredentialKind, _ request: CredentialRequest, caller: Caller) async throws(ServiceError) -> CredentialCreated {
        try await call("POST", Self.path(Self.collection(kind)), request)
    }

    public func credentials(kind: CredentialKind, caller: Caller) async throws(ServiceError) -> CredentialList {
        try await call("GET", Self.path(Self.collection(kind)))
    }

    public func revokeCredential(kind: CredentialKind, name: String, caller: Caller) async throws(ServiceError) {
        try await send("DELETE", Self.path(Self.member(kind), ["name": name]))
    }

    public func authenticate(credential: String, address: String) async throws(ServiceError) -> Caller {
        throw ServiceError(.notSupported, "a remote validator authenticates its own callers")
    }

    public func audit(user: String?, limit: Int, caller: Caller) async throws(ServiceError) -> AuditList {
        return try await call("GET", Self.path(.audit, query: [("limit", "\(limit)")] + (user.map { [("user", $0)] } ?? [])))
    }

    public func record(_ entry: AuditEntry) async {}

    public func pruneAudit(before time: Int64) async throws(ServiceError) -> Int {
        throw ServiceError(.notSupported, "the validator prunes its own audit log (audit_retention_days)")
    }

    public func checkHealth() async throws(ServiceError) {
        let health: HealthResponse = try await call("GET", Self.path(.health))
        guard health.status == "ok" else { throw ServiceError(.unavailable, "the validator at \(server) reports \(health.status)") }
    }

    public func close() async {}
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString(body)
}
