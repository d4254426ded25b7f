import ArgumentParser

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: ArgumentHelp(
        "Keep database, key and securotp.conf in this directory (env SECUROTP_STATE_DIR).",
        valueName: "DIR"))
    var stateDirectory: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("Read settings from this file instead of the default.", valueName: "FILE"))
    var config: String?
}

/// `--format text|json` for commands with machine-readable output.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}
