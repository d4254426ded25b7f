import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import SecurOTPCore
import SecurOTPPostgres
import SecurOTPServer
import SecurOTPService
import SecurOTPStore
import Synchronization
import Testing

/// The fixture's clock: the wall clock, or a time that stands still (`frozenAt`), plus an offset
/// a test moves forward (`advance`), so that expiry and lockout tests move the validator's time
/// instead of sleeping or editing rows. Long-poll deadlines stay on the wall clock (they are
/// waits, not decisions).
final class TestClock: Sendable {
    private let offset = Atomic<Int64>(0)
    private let frozenAt: Int64?

    init(frozenAt: Int64? = nil) { self.frozenAt = frozenAt }

    var service: ServiceClock { ServiceClock { (self.frozenAt ?? Int64(time(nil))) + self.offset.load(ordering: .relaxed) } }

    func now() -> Int64 { service.now() }

    func advance(_ seconds: Int64) { offset.add(seconds, ordering: .relaxed) }
}

/// Which store answers: every API test runs on both.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// The backends this run tests: both, or SQLite alone with SECUROTP_TEST_POSTGRES=off
    /// (`make test-fast`, no PostgreSQL server).
    static var tested: [Backend] { TestPostgres.enabled ? allCases : [.sqlite] }
}

extension Trait where Self == ConditionTrait {
    /// For tests of PostgreSQL alone: skipped with SECUROTP_TEST_POSTGRES=off.
    static var needsPostgreSQL: Self { .enabled(if: TestPostgres.enabled, "SECUROTP_TEST_POSTGRES=off: no PostgreSQL server in this run") }
}

/// A validator on a fresh store — SQLite in a temporary directory, or a fresh PostgreSQL
/// database on the test server (SECUROTP_TEST_POSTGRES; scripts/postgres-test.sh starts one)
/// — with one admin and one host credential, and the application securotpd would run on it.
struct ValidatorFixture {
    let directory: String
    let service: any TokenService
    let configuration: DaemonConfiguration
    let admin: String
    let host: String
    /// The PostgreSQL database made for this fixture, dropped by `cleanUp`.
    let database: String?
    /// What the application counts; `/metrics` (its own listener in securotpd) serves it.
    let metrics = ValidatorMetrics()
    /// The validator's time (TestClock): move it with `clock.advance`.
    let clock: TestClock
    /// The application's long-polls: `await waiters.held(atLeast: n)` before the change a
    /// parked wait must see, instead of sleeping until it is parked.
    let waiters: PushWaiters

    static func make(_ backend: Backend = .sqlite, clock: TestClock = TestClock(),
                     _ configure: (inout DaemonConfiguration) -> Void = { _ in }) async throws -> ValidatorFixture {
        let directory = try temporaryDirectory()
        var configuration = DaemonConfiguration()
        configuration.store.paths = StorePaths(stateDirectory: directory)
        configuration.listen = .tcp(host: "127.0.0.1", port: 0)
        configuration.metricsListen = nil
        // Hundreds of fixtures share one PostgreSQL server in the parallel run: its store check
        // may take seconds there. healthWithoutStore drops the database, which fails at once.
        configuration.healthTimeoutSeconds = 60
        configure(&configuration)
        let service: any TokenService
        var database: String?
        switch backend {
        case .sqlite:
            service = try SQLiteTokenService(settings: configuration.store, create: true, pushPolicy: configuration.push, clock: clock.service)
        case .postgres:
            _ = try KeyFile.create(configuration.store.paths.keyFile)
            let name = "securotp_test_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            try TestPostgres.sql("CREATE DATABASE \(name)")
            database = name
            configuration.postgresURL = TestPostgres.url(database: name)
            var logger = Logger(label: "securotp-test")
            logger.logLevel = .critical
            service = try await PostgresTokenService.connect(url: TestPostgres.url(database: name), settings: configuration.store, logger: logger,
                                                                   pushPolicy: configuration.push, clock: clock.service)
        }
        let admin = try await service.addCredential(kind: .admin, CredentialRequest(name: "root"), caller: .local("test")).credential
        let host = try await service.addCredential(kind: .host, CredentialRequest(name: "web1"), caller: .local("test")).credential
        return ValidatorFixture(directory: directory, service: service, configuration: configuration, admin: admin, host: host, database: database,
                                clock: clock, waiters: PushWaiters(capacity: configuration.maxPushWaiters))
    }

    /// Closes the service and removes the store.
    func cleanUp() async {
        await service.close()
        try? FileManager.default.removeItem(atPath: directory)
        if let database { try? TestPostgres.sql("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
    }

    func application() throws -> some ApplicationProtocol {
        var logger = Logger(label: "securotpd-test")
        logger.logLevel = .critical
        return try buildApplication(configuration: configuration, service: service, logger: logger, metrics: metrics, waiters: waiters)
    }

    /// Runs `body` with an in-process client of the application (no sockets).
    func withClient<R: Sendable>(_ body: @Sendable (APIClient) async throws -> R) async throws -> R {
        do {
            let result = try await application().test(.router) { client in try await body(APIClient(client: client)) }
            await cleanUp()
            return result
        } catch {
            await cleanUp()
            throw error
        }
    }

    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/securotpd-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        return String(cString: made)
    }
}

/// The PostgreSQL server the tests use, through psql.
enum TestPostgres {
    static var enabled: Bool { ProcessInfo.processInfo.environment["SECUROTP_TEST_POSTGRES"] != "off" }

    static var server: String {
        ProcessInfo.processInfo.environment["SECUROTP_TEST_POSTGRES"] ?? "postgres://securotp:securotp-test@127.0.0.1:5432/postgres"
    }

    static func url(database: String) -> String {
        guard var components = URLComponents(string: server) else { return server }
        components.path = "/" + database
        return components.string ?? server
    }

    static func sql(_ statement: String, database: String? = nil) throws {
        _ = try value(statement, database: database)
    }

    /// What psql prints for `statement` (unaligned, tuples only), in `database` or the server's own.
    static func value(_ statement: String, database: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        process.arguments = [database.map(url) ?? server, "-qAtc", statement]
        let errors = Pipe(), output = Pipe()
        process.standardError = errors
        process.standardOutput = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey:
                "psql \(statement): \(message) (is PostgreSQL running? scripts/postgres-test.sh starts it)"])
        }
        return printed.trimmingCharacters(in: .whitespacesAndNewlines)
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
              rawBody: String? = nil, origin: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Answer {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        if let origin { headers[.origin] = origin }
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
            let code = (json["error"] as? [String: Any])?["code"] as? String ?? ""
            #expect(DocumentedAPIErrors.statuses[code] != nil, "error code \(code) is not in docs/errors.md: \(text)", sourceLocation: sourceLocation)
        }
        return Answer(status: status, json: json, text: text)
    }
}

/// Codes computed with the core (the OTP algorithms are checked against RFC vectors and
/// oathtool elsewhere; here they only drive the API).
enum Codes {
    /// `at`: the validator's time when it is not the wall clock's (TestClock).
    static func totp(_ secret: String, offset: Int64 = 0, at: Int64? = nil) -> String {
        guard let seed = Base32.decode(secret) else { return "" }
        let now = (at ?? Int64(Date().timeIntervalSince1970)) + offset * 30
        return String(decoding: OTP.totp(secret: seed, unixTime: now, period: 30, digits: 6, algorithm: .sha1), as: UTF8.self)
    }

    static func hotp(_ secret: String, counter: UInt64) -> String {
        guard let seed = Base32.decode(secret) else { return "" }
        return String(decoding: OTP.hotp(secret: seed, counter: counter, digits: 6, algorithm: .sha1), as: UTF8.self)
    }

    /// A six-digit code of no TOTP step within the resync range (50 steps) of now, with room:
    /// a wrong code that can neither pass nor start a "next code" dialogue by luck.
    static func wrongTOTP(_ secret: String, at: Int64? = nil) -> String {
        wrong(avoiding: Set((-80...80).map { totp(secret, offset: $0, at: at) }))
    }

    /// A six-digit code none of `valid` is.
    static func wrong(avoiding valid: Set<String>) -> String {
        var code = 0
        while valid.contains(String(format: "%06d", code)) { code += 1 }
        return String(format: "%06d", code)
    }
}
