import Foundation
import Logging
import SecurOTPPostgres
import SecurOTPServer
import SecurOTPService

/// The store the configuration names: PostgreSQL for `database = postgres://…`, else SQLite.
enum ServiceFactory {
    static func open(_ settings: DaemonConfiguration, logger: Logger) async throws(ServiceError) -> any TokenService {
        if let url = settings.postgresURL {
            return try await PostgresTokenService.connect(url: url, settings: settings.store, logger: logger, pushPolicy: settings.push)
        }
        // An existing store, migrated at start-up when older (securotpd is the admin's daemon: a
        // restart after an upgrade is enough), but never created here: a validator that made an
        // empty store where its database went missing would let every host's nullok skip the
        // code. `securotp admin add` / `host add` / `enroll` make it (docs/validator.md).
        return try SQLiteTokenService(settings: settings.store, create: false, backgroundCheckpoints: true, pushPolicy: settings.push)
    }
}
