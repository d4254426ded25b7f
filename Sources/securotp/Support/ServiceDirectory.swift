import Logging
import SecurOTPPostgres
import SecurOTPService
import SecurOTPStore

/// Services the CLI can open besides the local store and a remote validator.
enum ServiceDirectory {
    /// The validator's PostgreSQL database, with its key file (--store-key or the default).
    static func postgres(url: String, settings: Settings) async throws -> any TokenService {
        var logger = Logger(label: "securotp")
        logger.logLevel = .critical
        return try await PostgresTokenService.connect(url: url, settings: settings, logger: logger)
    }
}
