import ArgumentParser
import Glibc
import SecurOTPAuthenticator
import SecurOTPCommandLine

/// The option every subcommand takes.
struct StoreOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "Keep the store in this directory instead of $XDG_DATA_HOME/securotp (env SECUROTP_AUTHENTICATOR_DIR).",
        valueName: "DIR"))
    var dataDirectory: String?
}

/// What a command runs against: the store's paths, this process's identity, the clock.
struct Context {
    let paths: AuthenticatorPaths
    let identity: DeviceIdentity
    let now: Int64

    init(_ options: StoreOptions) throws {
        paths = try AuthenticatorPaths.resolve(dataDirectory: options.dataDirectory)
        identity = try DeviceIdentity.current()
        now = Int64(time(nil))
    }

    /// The store; `create` makes it where it does not exist yet (import, binding-id).
    func open(create: Bool = false) throws -> AuthenticatorStore {
        try AuthenticatorStore.open(paths, identity: identity, create: create, now: now)
    }

    static func fail(_ message: String, exitCode: Int32) -> Never {
        standardError("securotp-authenticator: \(message)\n")
        exit(exitCode)
    }
}
