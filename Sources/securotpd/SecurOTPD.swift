import ArgumentParser
import Foundation
import Logging
import SecurOTPCore
import SecurOTPPostgres
import SecurOTPServer
import SecurOTPService

/// `securotpd`: the validator daemon. Reads its configuration (file, environment, flags),
/// opens the store, and serves the /v1 API until SIGTERM or SIGINT, finishing requests in
/// flight before it exits.
@main
struct SecurOTPD: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "securotpd",
        abstract: "The securotp validator: verifies passcodes for many hosts and manages tokens centrally, over HTTPS.",
        discussion: """
        Settings come from /etc/securotp/securotpd.conf (key = value; --config names another file), then SECUROTPD_<KEY> environment variables, then these flags. Plain HTTP is allowed only on loopback or a Unix socket; anything else needs --tls-cert and --tls-key.

        First steps:
          securotp admin add alice                 # an admin credential (local store), printed once
          securotp host add web1                   # a host credential for web1's PAM module
          securotpd --listen 0.0.0.0:8443 --tls-cert /etc/securotp/tls.crt --tls-key /etc/securotp/tls.key
          securotpd --check-config                 # check settings, files and the store, then exit

        Several nodes share one PostgreSQL database: --database postgres://user:password@db/securotp (every node needs the same key file). See docs/validator.md.

        Idle connections: one with no request in progress (before its first, between requests, or sending one too slowly) is closed after idle_timeout seconds (default 60, 1-3600), and so is one whose request body is not in within that time of its head; a waiting long-poll counts as in progress. For clients that keep connections open longer: idle_timeout = 300 in securotpd.conf, or SECUROTPD_IDLE_TIMEOUT=300.

        Limits are rates: push_limit (default 5) push requests are counted per user, each for push_limit_interval seconds (default 60, 30-3600) after the one before, and any successful login clears them; devices' requests are limited per device (rate_limit_device, default 60 a minute) and their long-polls to half of push_waiters (4 per device); device activation, which takes no credential, per client address (rate_limit_web). Every setting: securotpd(8).
        """,
        version: SecurOTPVersion.string
    )

    @Option(help: ArgumentHelp("Listen on HOST:PORT, [IPv6]:PORT or unix:/PATH (default 127.0.0.1:8443).", valueName: "ADDRESS"))
    var listen: String?

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain; turns on TLS (1.2 or newer).", valueName: "FILE"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key of the certificate (owner-only file).", valueName: "FILE"))
    var tlsKey: String?

    @Option(name: .customLong("tls-client-ca"), help: ArgumentHelp("Require client certificates signed by this CA (mutual TLS).", valueName: "FILE"))
    var tlsClientCA: String?

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Keep the SQLite store (database and key file) in DIR.", valueName: "DIR"))
    var stateDirectory: String?

    @Option(help: ArgumentHelp("SQLite database path, or postgres://USER:PASSWORD@HOST:PORT/DB for PostgreSQL.", valueName: "URL|PATH"))
    var database: String?

    @Option(name: .customLong("public-url"), help: ArgumentHelp("The validator's address as phones' browsers see it (passkeys, docs/push.md); https://HOST[:PORT].", valueName: "URL"))
    var publicURL: String?

    @Option(help: ArgumentHelp("Read settings from FILE instead of \(DaemonConfiguration.defaultPath).", valueName: "FILE"))
    var config: String?

    @Flag(name: .customLong("check-config"), help: "Check the configuration, its files and the store, print a summary and exit.")
    var checkConfig = false

    func run() async throws {
        do {
            try await serve()
        } catch let error as ServiceError {
            Self.fail(error.cliCode, error.message)
        }
    }

    private func serve() async throws {
        var settings = DaemonConfiguration()
        try settings.load(path: config ?? DaemonConfiguration.defaultPath, required: config != nil)
        try settings.applyEnvironment(ProcessInfo.processInfo.environment)
        let flags: [(String, String?)] = [("listen", listen), ("tls_cert", tlsCert), ("tls_key", tlsKey), ("tls_client_ca", tlsClientCA),
                                          ("state_dir", stateDirectory), ("database", database),
                                          ("public_url", publicURL)]
        for case let (key, value?) in flags { try settings.apply(key: key, value: value, origin: "--\(key.replacingOccurrences(of: "_", with: "-"))") }
        try settings.validate()
        try await run(settings)
    }

    private func run(_ configured: DaemonConfiguration) async throws {
        LoggingSystem.bootstrap { label in
            var handler = LogfmtHandler(label: label)
            handler.logLevel = Logger.Level(rawValue: configured.logLevel) ?? .info
            return handler
        }
        let logger = Logger(label: "securotpd")
        // Before anything listens, so that a taken metrics port is named, not a bare bind error
        // after the API's "listening" line.
        var checked = configured
        if let warning = try checked.checkMetricsListener() { logger.warning("\(warning)") }
        let settings = checked
        let service = try await ServiceFactory.open(settings, logger: logger)
        let location = settings.postgresURL.map(PostgresURL.redacted) ?? settings.store.paths.database
        if checkConfig {
            do {
                try await service.checkHealth()
            } catch {
                await service.close()
                throw error
            }
            print("securotpd configuration is valid: listen \(settings.listen)\(settings.usesTLS ? " (TLS)" : " (plain HTTP, local only)"), store \(service.storeKind) at \(location)")
            await service.close()
            return
        }
        let app = try buildApplication(configuration: settings, service: service, logger: logger) { bound in
            // The bound address: with port 0 the kernel picks one, and tests and scripts read it here.
            logger.notice("securotpd listening", metadata: ["listen": "\(bound)", "tls": "\(settings.usesTLS)",
                                                             "store": "\(service.storeKind)", "version": "\(SecurOTPVersion.string)"])
        }
        try await app.runService()
        await service.close()
        logger.notice("securotpd stopped")
    }

    static func fail(_ code: CLIErrorCode, _ message: String) -> Never {
        FileHandle.standardError.write(Data(code.line(program: "securotpd", message).utf8))
        Foundation.exit(code.exitStatus)
    }
}
