import Foundation
import Logging
import NIOSSL
import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// The TokenService of a PostgreSQL database that several securotpd nodes share. Decisions
/// come from the same VerificationEngine as the SQLite store, and every write they make is a
/// conditional update (PostgresWrites), so exactly-once holds across nodes without a lock.
/// Token codes, the common case, are verified in batches (PostgresTokenService+Batch.swift,
/// BatchQueue): one read for the batch and one call of `securotp_apply_committed` that
/// commits it; a verification that lost its race decides again in the next batch. Recovery
/// codes, hosts with offline codes, OCRA challenges (issued or answered), dialogue answers and
/// verifications that lost three races run in one transaction under a per-user advisory lock
/// instead (so two nodes serialise on a user like two logins on one SQLite file). Every node
/// needs the same key file: it seals the seeds.
public final class PostgresTokenService: TokenService, @unchecked Sendable {
    public let storeKind = "postgres"
    let client: PostgresClient
    private let runner: Task<Void, Never>
    let settings: Settings
    let keys: KeyFile
    let engine: VerificationEngine
    /// The URL without its password, for status and logs.
    let location: String
    let logger: Logger
    /// `push_limit` and the rest (DeviceService, PostgresTokenService+Push.swift).
    public let pushPolicy: PushPolicy
    public let clock: ServiceClock
    /// The LISTEN connection of PushChangeFeed, once the server follows it.
    let pushFeed = PushFeedTask()
    let lastTouch = CredentialUse()
    /// Nodes share the database, so a credential is read again after a second (CredentialCache).
    let credentialCache = CredentialCache()
    /// Verifications waiting for a batch (PostgresTokenService+Batch.swift). Up to 32 per batch
    /// (each a subtransaction, under PostgreSQL's 64 cached per backend); two batches in
    /// flight, so one is read while another commits (measured at c16: 1 runner 5,980/s,
    /// 2 runners 6,020/s, 4 runners 5,300/s).
    let verificationJobs = BatchQueue<VerificationJob>(maximumBatch: 32, maximumRunners: 2, key: \.call.user)

    private init(client: PostgresClient, runner: Task<Void, Never>, settings: Settings, keys: KeyFile, location: String, logger: Logger,
                 pushPolicy: PushPolicy, clock: ServiceClock) {
        self.clock = clock
        self.client = client
        self.runner = runner
        self.settings = settings
        self.keys = keys
        engine = VerificationEngine(dataKey: keys.dataKey)
        self.location = location
        self.logger = logger
        self.pushPolicy = pushPolicy
    }

    /// Connects to `url` (postgres://USER:PASSWORD@HOST:PORT/DB[?sslmode=disable|require&sslrootcert=FILE]),
    /// migrates the schema, and loads the key file `settings.paths.keyFile`.
    public static func connect(url: String, settings: Settings, logger: Logger,
                               pushPolicy: PushPolicy = PushPolicy(), clock: ServiceClock = .wall) async throws(ServiceError) -> PostgresTokenService {
        let keys: KeyFile
        do throws(StoreError) { keys = try KeyFile.load(settings.paths.keyFile) } catch { throw ServiceError(error) }
        let configuration = try PostgresURL.configuration(url)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let runner = Task { await client.run() }
        let service = PostgresTokenService(client: client, runner: runner, settings: settings, keys: keys,
                                           location: PostgresURL.redacted(url), logger: logger, pushPolicy: pushPolicy,
                                           clock: clock)
        do {
            try await PostgresSchema.migrate(client, logger: logger)
        } catch {
            runner.cancel()
            throw service.failure(error, doing: "preparing the database")
        }
        return service
    }

    public func close() async {
        await pushFeed.stop()
        runner.cancel()
        _ = await runner.value
    }

    public func checkHealth() async throws(ServiceError) {
        try await run("checking the database") { connection in
            _ = try await connection.query("SELECT 1", logger: self.logger)
        }
    }

    func now() -> Int64 { clock.now() }

    // MARK: transactions

    /// Runs `body` in one transaction on a pooled connection; errors become ServiceErrors
    /// (a StateWrite conflict keeps its message; PostgreSQL's own errors say what failed).
    func transaction<R: Sendable>(_ doing: String, _ body: @Sendable (PostgresConnection) async throws -> R) async throws(ServiceError) -> R {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch {
            throw failure(error, doing: doing)
        }
    }

    /// Runs `body` on a pooled connection outside a transaction (single statements, reads).
    func run<R: Sendable>(_ doing: String, _ body: @Sendable (PostgresConnection) async throws -> R) async throws(ServiceError) -> R {
        do {
            return try await client.withConnection { connection in try await body(connection) }
        } catch {
            throw failure(error, doing: doing)
        }
    }

    func failure(_ error: any Error, doing: String) -> ServiceError {
        if let error = error as? ServiceError { return error }
        if let error = error as? StoreError { return ServiceError(error) }
        if let error = error as? PostgresWrites.Conflict { return ServiceError(error.storeError) }
        if let error = error as? PostgresTransactionError {
            return failure(error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? error, doing: doing)
        }
        if let error = error as? PSQLError {
            let reason = error.serverInfo?[.message] ?? "\(error.code)"
            logger.error("PostgreSQL failed", metadata: ["doing": "\(doing)", "error": "\(String(reflecting: error))"])
            return ServiceError(.database, "PostgreSQL at \(location) failed while \(doing): \(reason)")
        }
        if let error = error as? PostgresSchemaError { return ServiceError(.database, "\(error)") }
        return ServiceError(.database, "PostgreSQL at \(location) failed while \(doing): \(error)")
    }

    /// Serialises transactions on one user, across every node (released at commit or rollback).
    func lock(_ user: String, _ connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(user), 7))", logger: logger)
    }
}

/// `postgres://` URLs: user, password, host, port, database, and TLS by `sslmode`.
public enum PostgresURL {
    /// The query parameters read; any other, or one given twice, is a configuration error
    /// (a typo such as `sslmod=require` would otherwise connect without TLS in silence).
    static let parameters: Set<String> = ["sslmode", "sslrootcert"]

    static func configuration(_ url: String) throws(ServiceError) -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
              let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty else {
            throw ServiceError(.config, "database: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE (got \(TerminalText.quoted(redacted(url), limit: 256)))")
        }
        let database = String(components.path.drop { $0 == "/" })
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard parameters.contains(item.name) else {
                throw ServiceError(.config, """
                    database: unknown parameter \(TerminalText.quoted(item.name)) in \(TerminalText.quoted(redacted(url), limit: 256)); \
                    the parameters read are \(parameters.sorted().joined(separator: ", "))
                    """)
            }
            guard query[item.name] == nil else {
                throw ServiceError(.config, "database: \(item.name) given twice in \(TerminalText.quoted(redacted(url), limit: 256)); give it once")
            }
            query[item.name] = item.value ?? ""
        }
        let local = host == "localhost" || host == "127.0.0.1" || host == "::1"
        let mode = query["sslmode"] ?? (local ? "disable" : "require")
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable":
            tls = .disable
        case "require", "verify-full":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let root = query["sslrootcert"] { configuration.trustRoots = .file(root) }
            tls = .require(configuration)
        default:
            throw ServiceError(.config, "database: sslmode must be disable, require or verify-full (got \(TerminalText.quoted(mode)))")
        }
        var configuration = PostgresClient.Configuration(host: host, port: components.port ?? 5432, username: user,
                                                         password: components.password, database: database.isEmpty ? user : database, tls: tls)
        configuration.options.maximumConnections = 32
        configuration.options.minimumConnections = 2
        return configuration
    }

    /// A URL fit for logs and messages: the password replaced, also in a URL that does not
    /// parse (everything between `://` and the last `@` is hidden then).
    public static func redacted(_ url: String) -> String {
        if let parsed = URLComponents(string: url), parsed.host != nil {
            guard parsed.password != nil else { return url }
            var components = parsed
            components.password = "***"
            if let text = components.string { return text }
        }
        guard let at = url.lastIndex(of: "@") else { return url }
        let start = url.range(of: "://").map(\.upperBound) ?? url.startIndex
        guard start <= at else { return "***" + url[at...] }
        return url[..<start] + "***" + url[at...]
    }
}
