import SecurOTPStore

/// Every failure of the authenticator's store: a stable code for the CLI's exit status and for
/// tests, and a message that says which file or token, what is wrong and what to do.
/// Import refusals stay `ImportError`s (SecurOTPImport), so their codes are not flattened.
public struct AuthenticatorError: Error, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case permissions      // a file or directory others can reach, owned by someone else, or a symlink
        case otherDevice      // the store was made for another user or another machine
        case missing          // no store yet, no machine ID
        case corrupt          // key file, database or sealed seed unreadable
        case notFound         // no token with that serial
        case invalidInput     // bad nickname, PIN or serial; token already present or expired
        case database         // SQLite failed
        case system           // an OS call failed
        case unavailable      // the validator cannot be reached or answered nonsense
        case refused          // the validator refused the device's credential or code
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The shared SQLite wrapper and file helpers report StoreErrors; same meaning, our codes.
    init(_ error: StoreError) {
        let code: Code = switch error.code {
        case .permissions: .permissions
        case .missing: .missing
        case .corrupt: .corrupt
        case .database: .database
        case .notFound: .notFound
        case .invalidInput, .limit, .config: .invalidInput
        case .system: .system
        }
        self.init(code, error.message)
    }

    public var description: String { message }

    public static func == (a: AuthenticatorError, b: AuthenticatorError) -> Bool { a.code == b.code }
}

/// Runs code written against the shared store helpers, translating their errors.
func translating<R>(_ body: () throws(StoreError) -> R) throws(AuthenticatorError) -> R {
    do {
        return try body()
    } catch {
        throw AuthenticatorError(error)
    }
}
