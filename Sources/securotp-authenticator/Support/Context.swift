import ArgumentParser
import Glibc
import SecurOTPAuthenticator
import SecurOTPCommandLine
import SecurOTPCore

/// The option every subcommand takes.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "Keep the store in this directory instead of $XDG_DATA_HOME/securotp (env SECUROTP_AUTHENTICATOR_DIR).",
        valueName: "DIR"))
    var dataDirectory: String?
}

/// What a command runs against: the store's paths, this process's identity, the clock, where
/// output goes and how secret lines (PINs, passwords) are read. `init(_:)` makes it for a real
/// run; a test builds one (`init(paths:identity:now:output:)`) and reads what was printed.
struct Context {
    let paths: AuthenticatorPaths
    let identity: DeviceIdentity
    let now: Int64
    /// Where commands write: standard output, or what a test collects.
    var output: (String) -> Void = { text in Swift.print(text, terminator: "") }
    /// Secret lines as typed: the terminal with echo off, or what a test supplies.
    var secretLine: (_ prompt: String, _ what: String) throws -> [UInt8] = { prompt, what in
        try Terminal.secretLine(prompt: prompt, what: what)
    }

    init(_ options: StoreOptions) throws {
        paths = try AuthenticatorPaths.resolve(dataDirectory: options.dataDirectory)
        identity = try DeviceIdentity.current()
        now = Int64(time(nil))
    }

    init(paths: AuthenticatorPaths, identity: DeviceIdentity, now: Int64, output: @escaping (String) -> Void) {
        self.paths = paths
        self.identity = identity
        self.now = now
        self.output = output
    }

    /// The store; `create` makes it where it does not exist yet (import, binding-id).
    func open(create: Bool = false) throws -> AuthenticatorStore {
        try AuthenticatorStore.open(paths, identity: identity, create: create, now: now)
    }

    /// One line of output.
    func print(_ text: String) { output(text + "\n") }

    /// `value` as one line of key-sorted JSON (`Output.json`).
    func printJSON(_ value: some Encodable) throws { print(try Output.json(value)) }

    static func fail(_ code: CLIErrorCode, _ message: String) -> Never {
        standardError(code.line(program: "securotp-authenticator", message))
        exit(code.exitStatus)
    }
}

/// A command that works on the store: `run()` makes the context from its options; a test
/// hands one in (`run(in:)`).
protocol StoreCommand: ParsableCommand {
    var store: StoreOptions { get }
    func run(in context: Context) throws
}

extension StoreCommand {
    func run() throws { try run(in: Context(store)) }
}
