import ArgumentParser
import Glibc
import SecurOTPStore
import SecurOTPCommandLine

/// `securotp init`: makes the local token store and its key on purpose (root-only files and
/// directories), instead of as a side effect of the first enrollment. Idempotent: an existing
/// store is only checked (owners, modes, key) and its schema migrated.
struct Init: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the token store and its key if they do not exist (root-only).",
        discussion: """
        Creates /etc/securotp/securotp.key (owner-only; back it up: without it no seed opens) and \
        /var/lib/securotp/securotp.db, or the files of --state-dir DIR / securotp.conf. \
        An existing store is checked and its schema migrated; nothing is replaced. \
        The libpam-securotp package runs this when it is installed, so that enabling the module \
        finds a store (without one, every login through the module is refused).

        A PostgreSQL cluster's nodes share one key instead: securotp key generate --output FILE.
        """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print only what was created.")
    var quiet = false

    func run(in context: CommandContext) async throws {
        guard case .local = context.target else {
            throw CLIError.usage("init prepares this host's local store; for PostgreSQL make the shared key with 'securotp key generate --output FILE'")
        }
        let paths = context.settings.paths
        let keyExisted = access(paths.keyFile, F_OK) == 0
        let databaseExisted = access(paths.database, F_OK) == 0
        let store = try Store.open(paths, .create)
        let schema = store.schemaVersion
        if !keyExisted || !quiet {
            context.print("Key file: \(paths.keyFile) (\(keyExisted ? "exists, checked" : "created, owner-only; back it up: without it no seed opens"))")
        }
        if !databaseExisted || !quiet {
            context.print("Database: \(paths.database) (\(databaseExisted ? "exists, checked" : "created, owner-only"), schema \(schema))")
        }
    }
}

/// `securotp key generate --output FILE`: a new store key on its own — the one every node of a
/// PostgreSQL cluster (securotpd, securotp --database) loads to seal and open seeds.
struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Store keys.",
        subcommands: [Generate.self])

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new store key to a file (owner-only); never replaces one.",
            discussion: """
            The key seals every seed. For a PostgreSQL database shared by several securotpd nodes, \
            generate it once and copy it to each node as its key_file (root-owned, mode 0600). \
            Back it up: a lost key makes every sealed seed unreadable. A local store gets its key \
            from securotp init.
            """)

        @Option(name: .long, help: ArgumentHelp("Where to write the key (must not exist).", valueName: "FILE"))
        var output: String

        func run() async throws {
            var path = output
            if !path.hasPrefix("/") {
                guard let directory = getcwd(nil, 0) else { throw CLIError(.system, "cannot read the current directory") }
                path = String(cString: directory) + "/" + path
                free(directory)
            }
            umask(0o077)
            _ = try KeyFile.create(path)
            print("Key file: \(path) (created, owner-only). Copy it to every node as key_file (root-owned, mode 0600) and keep a backup.")
        }
    }
}
