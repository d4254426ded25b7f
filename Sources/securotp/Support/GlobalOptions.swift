import ArgumentParser

/// Options every subcommand takes: where the tokens are (a local store, PostgreSQL, or a
/// remote validator) and how to reach it.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: ArgumentHelp(
        "Keep database, key and securotp.conf in this directory (env SECUROTP_STATE_DIR).",
        valueName: "DIR"))
    var stateDirectory: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("Read settings from this file instead of the default.", valueName: "FILE"))
    var config: String?

    @Option(name: .customLong("server"), help: ArgumentHelp(
        "Manage tokens on a securotpd validator instead of the local store (env SECUROTP_SERVER).", valueName: "URL"))
    var server: String?

    @Option(name: .customLong("credential"), help: ArgumentHelp(
        "Admin credential file for --server (env SECUROTP_CREDENTIAL).", valueName: "FILE"))
    var credential: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp(
        "CA bundle that signed the validator's certificate (env SECUROTP_CA_FILE; default: the system's).", valueName: "FILE"))
    var caFile: String?

    @Option(name: .customLong("client-cert"), help: ArgumentHelp(
        "Client certificate for a validator that requires mutual TLS (env SECUROTP_CLIENT_CERT).", valueName: "FILE"))
    var clientCertificate: String?

    @Option(name: .customLong("client-key"), help: ArgumentHelp(
        "Its private key (env SECUROTP_CLIENT_KEY).", valueName: "FILE"))
    var clientKey: String?

    @Option(name: .customLong("database"), help: ArgumentHelp(
        "Use the validator's PostgreSQL database directly: postgres://USER:PASSWORD@HOST/DB (with --store-key).", valueName: "URL"))
    var database: String?

    @Option(name: .customLong("store-key"), help: ArgumentHelp(
        "The key file that seals the store's seeds, with --database (default /etc/securotp/securotp.key).", valueName: "FILE"))
    var storeKey: String?

    /// Options that take a value, as `hoistingGlobalOptions` must know them.
    static let namesWithValue: Set<String> = ["--state-dir", "--config", "--server", "--credential", "--ca-file", "--client-cert", "--client-key", "--database", "--store-key"]
}
