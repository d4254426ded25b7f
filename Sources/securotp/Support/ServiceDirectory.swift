import SecurOTPService
import SecurOTPStore

/// Services the CLI can open besides the local store and a remote validator.
enum ServiceDirectory {
    static func postgres(url: String, settings: Settings) async throws -> any TokenService {
        throw ServiceError(.notSupported, "PostgreSQL (--database) is not available in this build yet")
    }
}
