import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import SecurOTPCore
import SecurOTPServer
import SecurOTPService
import SecurOTPStore
import Testing

/// A validator on a fresh SQLite store in a temporary directory, with one admin and one host
/// credential, and the application securotpd would run on it.
struct ValidatorFixture {
    let directory: String
    let service: LocalTokenService
    let configuration: DaemonConfiguration
    let admin: String
    let host: String

    static func make(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) async throws -> ValidatorFixture {
        let directory = try temporaryDirectory()
        var configuration = DaemonConfiguration()
        configuration.store.paths = StorePaths(stateDirectory: directory)
        configuration.listen = .tcp(host: "127.0.0.1", port: 0)
        configure(&configuration)
        let service = try LocalTokenService(settings: configuration.store, create: true)
        let admin = try await service.addCredential(kind: .admin, CredentialRequest(name: "root"), caller: .local("test")).credential
        let host = try await service.addCredential(kind: .host, CredentialRequest(name: "web1"), caller: .local("test")).credential
        return ValidatorFixture(directory: directory, service: service, configuration: configuration, admin: admin, host: host)
    }

    func application() throws -> some ApplicationProtocol {
        var logger = Logger(label: "securotpd-test")
        logger.logLevel = .critical
        return try buildApplication(configuration: configuration, service: service, logger: logger)
    }

    /// Runs `body` with an in-process client of the application (no sockets).
    func withClient<R: Sendable>(_ body: @Sendable (APIClient) async throws -> R) async throws -> R {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await application().test(.router) { client in try await body(APIClient(client: client)) }
        await service.close()
        return result
    }

    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/securotpd-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        return String(cString: made)
    }
}

/// JSON requests with a bearer credential; every answer's status is checked against the
/// statuses docs/api/openapi.yaml documents for that operation.
struct APIClient: Sendable {
    let client: any TestClientProtocol

    struct Answer: @unchecked Sendable {
        let status: Int
        let json: [String: Any]
        let text: String

        subscript(key: String) -> Any? { json[key] }
        var string: (String) -> String? { { json[$0] as? String } }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
    }

    @discardableResult
    func call(_ method: HTTPRequest.Method, _ path: String, _ body: [String: Any]? = nil, bearer: String? = nil,
              rawBody: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Answer {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        var buffer: ByteBuffer?
        if let body { buffer = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)) }
        if let rawBody { buffer = ByteBuffer(string: rawBody) }
        let response = try await client.execute(uri: path, method: method, headers: headers, body: buffer)
        let text = String(buffer: response.body)
        let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        let status = Int(response.status.code)
        let documented = try OpenAPIDocument.shared.statuses(method: method.rawValue, path: path)
        #expect(documented.contains(status), "\(method) \(path) answered \(status), not documented (\(documented.sorted())): \(text)",
                sourceLocation: sourceLocation)
        if status >= 400 {
            #expect(response.headers[.contentType] == "application/json", "error without the JSON envelope", sourceLocation: sourceLocation)
        }
        return Answer(status: status, json: json, text: text)
    }
}

/// Codes computed with the core (the OTP algorithms are checked against RFC vectors and
/// oathtool elsewhere; here they only drive the API).
enum Codes {
    static func totp(_ secret: String, offset: Int64 = 0) -> String {
        guard let seed = Base32.decode(secret) else { return "" }
        let now = Int64(Date().timeIntervalSince1970) + offset * 30
        return String(decoding: OTP.totp(secret: seed, unixTime: now, period: 30, digits: 6, algorithm: .sha1), as: UTF8.self)
    }

    static func hotp(_ secret: String, counter: UInt64) -> String {
        guard let seed = Base32.decode(secret) else { return "" }
        return String(decoding: OTP.hotp(secret: seed, counter: counter, digits: 6, algorithm: .sha1), as: UTF8.self)
    }

    /// A six-digit code none of `valid` is.
    static func wrong(avoiding valid: Set<String>) -> String {
        var code = 0
        while valid.contains(String(format: "%06d", code)) { code += 1 }
        return String(format: "%06d", code)
    }
}
