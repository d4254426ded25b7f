import Glibc
import SecurOTPStore

/// What a command runs against: settings (config file + state directory) and the store.
struct CommandContext {
    var settings: Settings

    init(_ options: GlobalOptions) throws {
        var settings = Settings()
        let environment = getenv("SECUROTP_STATE_DIR").map { String(cString: $0) }
        if let directory = options.stateDirectory ?? environment.flatMap({ $0.isEmpty ? nil : $0 }) {
            guard directory.hasPrefix("/") else {
                throw CLIError.usage("--state-dir must be an absolute path (got \(directory))")
            }
            settings.paths = StorePaths(stateDirectory: directory)
        } else if geteuid() != 0 {
            throw CLIError(message: "securotp manages the system token store and must run as root (or use --state-dir DIR for a private store)", exitCode: 77)
        }
        if let config = options.config {
            guard config.hasPrefix("/") else { throw CLIError.usage("--config must be an absolute path (got \(config))") }
            settings.paths.config = config
        }
        try settings.load(configRequired: options.config != nil)
        self.settings = settings
    }

    func openStore(create: Bool = false) throws -> Store {
        let store = try Store.open(settings.paths, create: create)
        Self.opened.append(store)
        return store
    }

    /// Stores this run opened: checkpointed when the command ends, so securotp.db on its own
    /// is a complete copy of the store (for backups); the PAM module keeps its WAL instead.
    nonisolated(unsafe) static var opened: [Store] = []

    static func checkpointOpenedStores() {
        for store in opened { try? store.checkpoint() }
        opened.removeAll()
    }

    /// NSS's spelling of a user name (`Alice` → `alice` where NSS folds case), which is what
    /// the PAM module looks tokens up under; unknown names stay as given.
    static func canonical(_ user: String) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwnam_r(user, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return user }
        let canonical = String(cString: name)
        if canonical != user { warn("NSS names this account \(canonical); using that") }
        return canonical
    }

    static func now() -> Int64 { Int64(time(nil)) }

    static func fail(_ message: String, exitCode: Int32) -> Never {
        standardError("securotp: \(message)\n")
        exit(exitCode)
    }

    static func warn(_ message: String) {
        standardError("securotp: warning: \(message)\n")
    }

    /// Whether NSS knows the user (local, LDAP, SSSD).
    static func userExists(_ user: String) -> Bool {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        return getpwnam_r(user, &entry, &buffer, buffer.count, &result) == 0 && result != nil
    }
}

/// Writes to file descriptor 2 (Glibc's `stderr` global is not concurrency-safe in Swift 6).
func standardError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}
