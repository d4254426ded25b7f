import ArgumentParser
import Glibc

/// A failure a command reports as one line on standard error and a sysexits(3) code.
public struct CLIError: Error {
    public var message: String
    public var exitCode: Int32

    public init(message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    public static func usage(_ message: String) -> CLIError { CLIError(message: message, exitCode: 64) }
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
