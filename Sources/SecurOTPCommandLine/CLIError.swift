import ArgumentParser
import Glibc
import SecurOTPCore

/// A failure a command reports as one line on standard error with its stable code
/// (docs/errors.md) and that code's sysexits(3) status.
public struct CLIError: Error {
    public var code: CLIErrorCode
    public var message: String
    public var exitCode: Int32 { code.exitStatus }

    public init(_ code: CLIErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func usage(_ message: String) -> CLIError { CLIError(.usage, message) }
}

/// `--format text|json` for commands whose output is data.
public enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case text, json
}

/// Writes to file descriptor 2 (Glibc's `stderr` global is not concurrency-safe in Swift 6).
public func standardError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}

extension CLIErrorCode {
    /// ArgumentParser's verdict on the command line: 64 is a usage error; anything else
    /// (an error of a library without its own code) is unexpected.
    public init(parserExit status: Int32) {
        self = status == 64 ? .usage : .unexpected
    }
}
