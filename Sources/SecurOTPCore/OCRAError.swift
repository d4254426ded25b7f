/// Why an OCRA suite string was refused or a response could not be computed: a stable `code`
/// for callers and tests, and a message that names the offending part and what is allowed.
public struct OCRAError: Error, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The suite string does not follow RFC 6287 §6 (`OCRA-1:HOTP-H-t:DataInput`).
        case suite
        /// The challenge is too short, too long, or has characters outside its format.
        case question
        /// The counter is missing for a `C` suite, or given to a suite without `C`.
        case counter
        /// The PIN/password hash is missing, of the wrong length, or not wanted by the suite.
        case passwordHash
        /// The session information is missing, of the wrong length, or not wanted by the suite.
        case session
        /// The timestamp is missing for a `T` suite, or given to a suite without `T`.
        case timestamp
        /// The key is empty.
        case key
        /// HMAC failed (an unknown algorithm; should not happen).
        case crypto
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// Errors are equal when their codes are; the message is for people.
    public static func == (a: OCRAError, b: OCRAError) -> Bool { a.code == b.code }
}
