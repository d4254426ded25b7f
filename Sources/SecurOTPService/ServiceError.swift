import SecurOTPCore
import SecurOTPStore

/// Every failure a `TokenService` reports, local or remote: a stable code (the API's error
/// envelope carries it, the CLI maps it to a sysexits code) and a message an admin can act on.
public struct ServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Codable, CaseIterable {
        case invalidInput = "invalid_input"
        case notFound = "not_found"
        case limit
        case conflict
        case importInvalid = "import_invalid"
        case importDenied = "import_denied"
        case unauthorized
        case forbidden
        case rateLimited = "rate_limited"
        case unavailable
        /// A file the store needs does not exist (no store yet: enroll a token first).
        case missing
        case permissions
        case config
        case corrupt
        case database
        case system
        case notSupported = "not_supported"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (a: ServiceError, b: ServiceError) -> Bool { a.code == b.code }

    public init(_ error: StoreError) {
        let code: Code = switch error.code {
        case .permissions: .permissions
        case .missing: .missing
        case .config: .config
        case .corrupt: .corrupt
        case .database: .database
        case .limit: .limit
        case .notFound: .notFound
        case .invalidInput: .invalidInput
        case .system: .system
        }
        self.init(code, error.message)
    }

    /// The HTTP status the API answers with.
    public var httpStatus: Int {
        switch code {
        case .invalidInput: 400
        case .unauthorized: 401
        case .forbidden, .importDenied: 403
        case .notFound: 404
        case .limit, .conflict: 409
        case .importInvalid: 422
        case .rateLimited: 429
        case .notSupported: 501
        case .unavailable, .database, .missing: 503
        case .permissions, .config, .corrupt, .system: 500
        }
    }

    /// The CLI's code (docs/errors.md): one per service code, so a local and a --server run agree.
    public var cliCode: CLIErrorCode {
        switch code {
        case .invalidInput: .invalidInput
        case .notFound: .notFound
        case .limit: .limit
        case .conflict: .conflict
        case .importInvalid: .importInvalid
        case .importDenied: .importDenied
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .rateLimited: .rateLimited
        case .unavailable: .unavailable
        case .missing: .missing
        case .permissions: .permissions
        case .config: .config
        case .corrupt: .corrupt
        case .database: .database
        case .system: .system
        case .notSupported: .notSupported
        }
    }

    /// sysexits(3), as the CLI has always used them: scripts tell bad input from a broken installation.
    public var exitCode: Int32 { cliCode.exitStatus }
}
