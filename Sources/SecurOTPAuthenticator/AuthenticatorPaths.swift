import Foundation
import Glibc

/// Where the authenticator keeps its two files: `authenticator.key` (the random half of its
/// keys) and `authenticator.db` (tokens, seeds sealed). One directory per user, mode 0700.
public struct AuthenticatorPaths: Sendable, Equatable {
    /// Like --data-dir, for tests and for users who keep the store elsewhere.
    public static let directoryVariable = "SECUROTP_AUTHENTICATOR_DIR"

    public let directory: String
    public var keyFile: String { directory + "/authenticator.key" }
    public var database: String { directory + "/authenticator.db" }
    /// SQLite's rollback journal, present only while a write is under way or after a crash.
    var journal: String { database + "-journal" }

    public init(directory: String) {
        var trimmed = directory
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.directory = trimmed
    }

    /// --data-dir, else $SECUROTP_AUTHENTICATOR_DIR, else $XDG_DATA_HOME/securotp, else
    /// ~/.local/share/securotp (XDG Base Directory: a relative $XDG_DATA_HOME is ignored).
    public static func resolve(dataDirectory: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                               workingDirectory: String = FileManager.default.currentDirectoryPath) throws(AuthenticatorError) -> AuthenticatorPaths {
        if let explicit = dataDirectory ?? environment[directoryVariable].flatMap({ $0.isEmpty ? nil : $0 }) {
            return AuthenticatorPaths(directory: explicit.hasPrefix("/") ? explicit : workingDirectory + "/" + explicit)
        }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return AuthenticatorPaths(directory: xdg + "/securotp")
        }
        guard let home = environment["HOME"].flatMap({ $0.hasPrefix("/") ? $0 : nil }) ?? passwordDatabaseHome() else {
            throw AuthenticatorError(.missing, "cannot find your home directory (HOME is not set and the password database has no entry for uid \(geteuid())); use --data-dir DIR")
        }
        return AuthenticatorPaths(directory: (home == "/" ? "" : home) + "/.local/share/securotp")
    }

    private static func passwordDatabaseHome() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let home = entry.pw_dir else { return nil }
        let path = String(cString: home)
        return path.hasPrefix("/") ? path : nil
    }
}
