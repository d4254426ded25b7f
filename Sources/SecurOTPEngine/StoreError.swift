/// Every failure of the store, configuration or key handling: a stable code for scripts and
/// tests, and a message an admin can act on (which file, what is wrong, what to do).
public struct StoreError: Error, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case permissions      // file or directory others can read/write, or wrong owner
        case missing          // database, key or config file does not exist
        case config           // bad key or value in the configuration
        case corrupt          // unreadable key file, database or sealed seed
        case database         // SQLite failed
        case limit            // too many tokens and similar policy limits
        case notFound         // no such token
        case invalidInput     // bad user name, nickname, parameter
        case system           // an OS call failed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (a: StoreError, b: StoreError) -> Bool { a.code == b.code }
}

extension StoreError {
    /// A user has no token with this serial (the same answer whether the serial exists for
    /// someone else or not at all).
    public static func noSuchToken(user: String, serial: String) -> StoreError {
        StoreError(.notFound, "\(user) has no token with serial \(serial); see: securotp list \(user)")
    }
}
