import ArgumentParser
import Glibc
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import SecurOTPCommandLine
import SecurOTPCore

/// What a command runs against: a TokenService — the local SQLite store (default; root or
/// --state-dir), PostgreSQL (--database), or a remote validator (--server) — and the settings
/// of this machine.
struct CommandContext {
    enum Target {
        case local
        case remote(server: String, credential: String?, caFile: String?, clientCertificate: String?, clientKey: String?)
        case postgres(url: String)
    }

    var settings: Settings
    let target: Target
    /// Where commands write: standard output, or what a test collects.
    var output = CommandOutput.standard
    /// Seconds since the epoch; a test may fix it.
    var clock: @Sendable () -> Int64 = { Int64(time(nil)) }
    /// Secret lines (PINs) as typed: the terminal with echo off, or what a test supplies.
    var secretLine: (_ prompt: String, _ what: String) throws -> [UInt8] = { prompt, what in
        try Terminal.secretLine(prompt: prompt, what: what)
    }
    /// A service to run every command against instead of opening one (tests: a store in a
    /// temporary directory); the caller closes it.
    var service: (any TokenService)?

    /// The local store under `settings`, opened when a command needs it (doctor with a
    /// configuration that did not load; tests).
    init(settings: Settings, output: CommandOutput = .standard) {
        self.settings = settings
        target = .local
        self.output = output
    }

    /// A context on `service`, for running commands in-process (tests).
    init(service: any TokenService, settings: Settings, output: CommandOutput) {
        self.settings = settings
        target = .local
        self.service = service
        self.output = output
    }

    init(_ options: GlobalOptions) throws {
        func environment(_ name: String) -> String? {
            guard let value = getenv(name) else { return nil }
            let text = String(cString: value)
            return text.isEmpty ? nil : text
        }
        var settings = Settings()
        if let server = options.server ?? environment("SECUROTP_SERVER") {
            target = .remote(server: server, credential: options.credential ?? environment("SECUROTP_CREDENTIAL"),
                             caFile: options.caFile ?? environment("SECUROTP_CA_FILE"),
                             clientCertificate: options.clientCertificate ?? environment("SECUROTP_CLIENT_CERT"),
                             clientKey: options.clientKey ?? environment("SECUROTP_CLIENT_KEY"))
            self.settings = settings
            return
        }
        if let database = options.database {
            guard database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
                throw CLIError.usage("--database takes a postgres:// URL (the local SQLite store is chosen with --state-dir)")
            }
            target = .postgres(url: database)
        } else {
            target = .local
        }
        if let directory = options.stateDirectory ?? environment("SECUROTP_STATE_DIR") {
            guard directory.hasPrefix("/") else {
                throw CLIError.usage("--state-dir must be an absolute path (got \(TerminalText.quoted(directory)))")
            }
            settings.paths = StorePaths(stateDirectory: directory)
        } else if geteuid() != 0 {
            throw CLIError(.notRoot, "securotp manages the system token store and must run as root (or use --state-dir DIR for a private store, or --server URL for a validator)")
        }
        if let config = options.config {
            guard config.hasPrefix("/") else { throw CLIError.usage("--config must be an absolute path (got \(TerminalText.quoted(config)))") }
            settings.paths.config = config
        }
        if let storeKey = options.storeKey {
            guard storeKey.hasPrefix("/") else { throw CLIError.usage("--store-key must be an absolute path (got \(TerminalText.quoted(storeKey)))") }
            settings.paths.keyFile = storeKey
        }
        try settings.load(configRequired: options.config != nil)
        self.settings = settings
    }

    var isRemote: Bool { if case .remote = target { true } else { false } }

    /// The service for this run, closed when `body` returns. Local stores are created first
    /// when `create` is set (enroll, import, ...); otherwise a missing store is an error.
    func withService<R>(create: Bool = false, _ body: (any TokenService) async throws -> R) async throws -> R {
        if let service = self.service { return try await body(service) }
        let service: any TokenService
        switch target {
        case .local:
            service = try SQLiteTokenService(settings: settings, create: create)
        case .remote(let server, let credential, let caFile, let certificate, let key):
            service = try RemoteTokenService(server: server, credentialFile: credential, caFile: caFile, clientCertificate: certificate, clientKey: key)
        case .postgres(let url):
            service = try await ServiceDirectory.postgres(url: url, settings: settings)
        }
        do {
            let result = try await body(service)
            await service.close()
            return result
        } catch {
            await service.close()
            throw error
        }
    }

    /// Who the audit log names for commands run on this machine.
    var caller: Caller { .local(Self.invokingUser()) }

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

    func now() -> Int64 { clock() }

    /// One line of output.
    func print(_ text: String) { output.write(text + "\n") }

    static func fail(_ code: CLIErrorCode, _ message: String) -> Never {
        // Messages may carry what a validator or a host sent: escaped (TerminalText).
        standardError(code.line(program: "securotp", TerminalText.escaped(message)))
        exit(code.exitStatus)
    }

    static func warn(_ message: String) {
        standardError("securotp: warning: \(TerminalText.escaped(message))\n")
    }

    /// Whether NSS knows the user (local, LDAP, SSSD).
    static func userExists(_ user: String) -> Bool {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        return getpwnam_r(user, &entry, &buffer, buffer.count, &result) == 0 && result != nil
    }
}

/// Where a command's output goes.
struct CommandOutput: Sendable {
    let write: @Sendable (String) -> Void

    static let standard = CommandOutput { text in Swift.print(text, terminator: "") }
}

/// A command that runs against a CommandContext. `run()` makes the context from the global
/// options; a test hands one in (`run(in:)`) and reads what it printed.
protocol ContextCommand: AsyncParsableCommand {
    var global: GlobalOptions { get }
    func run(in context: CommandContext) async throws
}

extension ContextCommand {
    func run() async throws { try await run(in: CommandContext(global)) }
}
