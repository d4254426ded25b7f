import ArgumentParser
import CPosix
import Glibc
import SecurOTPCore
import SecurOTPStore

/// Checks a configuration and the PAM stacks before an admin relies on them.
struct Doctor: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check configuration, file permissions and the PAM stacks that use pam_securotp.",
        discussion: """
        Prints one line per finding (ok / warning / error) with the file, the line and what to do, and exits 78 (EX_CONFIG) when any error was found. Run it after every change to /etc/pam.d, securotp.conf or sshd_config, and keep a root shell open until a test login works (securotp test USER).

        Checks: the PAM stacks that reach pam_securotp (directly or through @include, include and substack, as pam-auth-update's common-auth does) and their arguments; the local store's key file and database (with the command that creates them), or in remote mode (validator=) the host credential, ca_file and one /v1/health call instead; the sshd configuration behind an sshd stack, with Include files, naming the earlier line that overrides a later one (sshd takes the first value); users who can log in without a token on stacks without nullok, who will be refused; users locked now.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .customLong("pam-dir"), help: ArgumentHelp("Directory of PAM service files.", valueName: "DIR"))
    var pamDirectory = "/etc/pam.d"

    @Option(name: .customLong("sshd-config"), help: ArgumentHelp("sshd configuration to check.", valueName: "FILE"))
    var sshdConfig = "/etc/ssh/sshd_config"

    @Option(name: .customLong("module-dir"), help: ArgumentHelp("Where relative module names are looked up.", valueName: "DIR"))
    var moduleDirectories: [String] = ["/lib/x86_64-linux-gnu/security", "/usr/lib/x86_64-linux-gnu/security", "/lib/security", "/lib64/security", "/usr/lib64/security"]

    final class Report {
        var errors = 0
        var warnings = 0
        let context: CommandContext

        init(_ context: CommandContext) { self.context = context }

        // Paths, PAM lines and a validator's answers come from outside: escaped (TerminalText).
        func ok(_ text: String) { context.print("ok       \(TerminalText.escaped(text))") }
        func warning(_ text: String) { warnings += 1; context.print("warning  \(TerminalText.escaped(text))") }
        func error(_ text: String) { errors += 1; context.print("error    \(TerminalText.escaped(text))") }
    }

    /// A module line and the settings it runs with (its arguments over securotp.conf); nil
    /// when they do not load (reported as an error at the line).
    typealias Line = (line: PAMStacks.ModuleLine, settings: Settings?)

    /// A configuration that does not load is a finding, not the end: the checks go on with
    /// the defaults.
    func run() async throws {
        let context: CommandContext
        do {
            context = try CommandContext(global)
        } catch let error as StoreError {
            let report = Report(CommandContext(settings: Settings()))
            report.error(error.message)
            try checkAll(report)
            return
        }
        try await run(in: context)
    }

    func run(in context: CommandContext) async throws {
        let report = Report(context)
        report.ok("configuration \(context.settings.paths.config) (missing is fine: defaults apply)")
        try checkAll(report)
    }

    private func checkAll(_ report: Report) throws {
        let settings = report.context.settings
        let stacks = PAMStacks(directory: pamDirectory)
        if stacks == nil { report.warning("cannot read \(pamDirectory)") }
        let lines: [Line] = (stacks?.moduleLines ?? []).map { line in (line, check(line.rule, at: line.location, report)) }

        // Remote mode (validator= on a module line, or in securotp.conf): the tokens are on the
        // validator; the local store is only checked for lines (or a configuration) that use it.
        let remoteLines = lines.filter { $0.settings?.remote.isEnabled == true }
        let localLines = lines.filter { $0.settings?.remote.isEnabled != true }
        let globalRemote = settings.remote.isEnabled
        if !localLines.isEmpty || (remoteLines.isEmpty && !globalRemote) {
            checkStore(settings, now: report.context.now(), report)
        }
        var checked: [ValidatorSettings] = []
        for line in remoteLines {
            guard let remote = line.settings?.remote, !checked.contains(remote) else { continue }
            checked.append(remote)
            RemoteChecks.check(remote, origin: line.line.location, report)
        }
        if globalRemote && checked.isEmpty { RemoteChecks.check(settings.remote, origin: settings.paths.config, report) }

        checkRefusedUsers(localLines, report)
        if let stacks {
            for use in stacks.uses where !use.via.isEmpty {
                report.ok("service \(PAMStacks.describe(use)) runs pam_securotp at \(use.line.location)")
            }
            let sshServices = stacks.uses.filter { $0.service == "sshd" || $0.service.hasPrefix("sshd-") || $0.service.hasPrefix("sshd.") }
            if let use = sshServices.first { checkSSHD(use, report) }
            if stacks.moduleLines.isEmpty {
                report.warning("no PAM service in \(pamDirectory) uses pam_securotp yet; see README \"Deploy\" for sshd and sudo")
            }
        }
        report.context.print("\n\(report.errors) error\(report.errors == 1 ? "" : "s"), \(report.warnings) warning\(report.warnings == 1 ? "" : "s").")
        if report.errors > 0 { throw ExitCode(78) }
    }

    /// `securotp init` with the options that chose this store.
    private func initCommand(_ paths: StorePaths) -> String {
        var command = "securotp init"
        if let directory = paths.stateDirectory { command += " --state-dir \(directory)" }
        if let config = global.config { command += " --config \(config)" }
        return command
    }

    private func checkStore(_ settings: Settings, now: Int64, _ report: Report) {
        let paths = settings.paths
        let keyExists = access(paths.keyFile, F_OK) == 0
        let databaseExists = access(paths.database, F_OK) == 0
        for (path, what) in [(paths.keyFile, "key file"), (paths.database, "database")] {
            do {
                try FileSecurity.check(path, .secret)
                report.ok("\(what) \(path) is owner-only")
            } catch where error.code == .missing {
                if path == paths.keyFile && databaseExists {
                    report.error("""
                        key file \(path) does not exist but the database \(paths.database) does: its seeds cannot be opened \
                        and every login through the module is refused. Restore the key file from backup (root-owned, mode 0600); \
                        do not make a new one
                        """)
                } else if path == paths.database && !keyExists {
                    continue // one fix for both, given with the key file
                } else {
                    let creates = keyExists
                        ? "creates the database \(paths.database) (owner root, mode 0600, its directory 0700) under the existing key"
                        : "creates the key file \(paths.keyFile) and the database \(paths.database) (owner root, mode 0600, new directories 0700; back the key up)"
                    report.error("\(what) \(path) does not exist: every login through the module is refused. Fix: \(initCommand(paths)) — \(creates)")
                }
            } catch {
                report.error("\(what): \(error.message)")
            }
        }
        do {
            // As the module opens it: an empty or unmigrated database is an error here too.
            let store = try Store.open(paths, .asIs)
            let tokens = try store.tokens()
            report.ok("store opens: schema \(store.schemaVersion), \(tokens.count) tokens for \(Set(tokens.map(\.user)).count) users")
            if tokens.isEmpty { checkEmptyStore(paths, report) }
            if !tokens.contains(where: { $0.user == "root" }) {
                report.warning("root has no token: a stack without nullok will refuse root logins (keep a root shell open while testing)")
            }
            // A locked user is refused even with the right code, and is not told so at the prompt.
            let locked = try store.lockedUsers(now: now).filter { $0 != Store.unresolvedUsersKey }
            if !locked.isEmpty {
                report.warning("""
                    locked now: \(locked.map { TerminalText.escaped($0) }.joined(separator: ", ")) — refused even with the right code \
                    until the lock ends (unlock_time) or: securotp unlock USER
                    """)
            }
        } catch {
            if error.code != .missing && error.code != .permissions { report.error("store: \(error.message)") }
        }
    }

    /// Users who can log in but have no token, on each local-mode line without nullok: the
    /// module refuses them (PAM_AUTH_ERR) before they are asked anything.
    private func checkRefusedUsers(_ lines: [Line], _ report: Report) {
        var users: [String]?
        for case let (line, settings?) in lines where !settings.nullok && line.rule.type == "auth" {
            let everyone = users ?? LoginUsers.all()
            users = everyone
            do {
                let refused = try LoginUsers.refused(by: settings, users: everyone)
                if refused.isEmpty {
                    report.ok("\(line.location): no nullok, and every user who can log in\(settings.groups.isEmpty ? "" : " (of groups=)") has a token")
                } else {
                    report.warning("""
                        \(line.location): no nullok: \(refused.count) user\(refused.count == 1 ? "" : "s") who can log in have no token \
                        and will be refused: \(LoginUsers.list(refused)) — enroll them (securotp enroll USER), or add nullok to this line \
                        until they are
                        """)
                }
            } catch {
                continue // the store's own errors are reported above
            }
        }
    }

    /// A store without tokens is usual on a new install, where the database and its key file
    /// are made together. One whose database was born well after its key file was written was
    /// made again, or replaced by an empty one, under a key that may have sealed seeds before
    /// (a failed restore; an empty file an older securotp turned into an empty store): with
    /// nullok, everyone then skips the second factor (issue 12 §3).
    private func checkEmptyStore(_ paths: StorePaths, _ report: Report) {
        var born: Int64 = 0
        var key = stat()
        // No birth time (file system or kernel without it): nothing to compare.
        guard securotp_birth_time(paths.database, &born) == 0, lstat(paths.keyFile, &key) == 0 else { return }
        let later = born - Int64(key.st_mtim.tv_sec)
        guard later > 60 else { return }
        let age = later >= 172_800 ? "\(later / 86_400) days" : later >= 7_200 ? "\(later / 3_600) hours" : "\(later / 60) minutes"
        report.warning("""
            suspicious: the store has no tokens and its database \(paths.database) is younger than its key file \(paths.keyFile) \
            (by \(age)): was it restored, replaced or emptied? If users had tokens, restore the database from backup; \
            with nullok, users without a token skip the second factor
            """)
    }

    /// Checks one module line; returns the settings it runs with.
    private func check(_ rule: PAMRule, at location: String, _ report: Report) -> Settings? {
        if rule.type != "auth" {
            report.error("\(location): pam_securotp implements only 'auth' (found '\(rule.type)'); remove this line or make it 'auth'")
            return nil
        }
        switch rule.control {
        case "sufficient":
            report.error("\(location): 'sufficient' lets a code alone log users in; use 'required' (after the password module) or 'requisite'")
        case "optional":
            report.warning("\(location): 'optional' does not enforce the second factor; use 'required'")
        default:
            report.ok("\(location): auth \(rule.control)")
        }
        let path = rule.module.hasPrefix("/") ? rule.module : moduleDirectories.map { $0 + "/" + rule.module }.first { access($0, R_OK) == 0 } ?? ""
        if path.isEmpty || access(path, R_OK) != 0 {
            report.error("\(location): module \(rule.module) not found: every login through this stack fails (PAM unable to dlopen); install libpam-securotp (or make install), or give its absolute path")
        }
        do {
            let settings = try Settings.fromModuleArguments(rule.arguments)
            if settings.nullok { report.warning("\(location): nullok lets users without a token skip the second factor (PAM_IGNORE)") }
            if !settings.groups.isEmpty { report.ok("\(location): second factor only for groups \(rule.arguments.first { $0.hasPrefix("groups=") } ?? "")") }
            if settings.forwardPass { report.ok("\(location): forward_pass: the next auth module must use use_first_pass or try_first_pass") }
            return settings
        } catch {
            report.error("\(location): \(error.message)")
            return nil
        }
    }

    /// sshd's settings for keyboard-interactive PAM logins, as sshd reads them: the FIRST value
    /// of each keyword wins, so an earlier line (often Debian's `KbdInteractiveAuthentication no`,
    /// or a file in sshd_config.d) silently overrides what an admin appends.
    private func checkSSHD(_ use: PAMStacks.Use, _ report: Report) {
        let config = SSHDConfig(path: sshdConfig)
        if config.unreadable.contains(sshdConfig) {
            report.warning("cannot read \(sshdConfig) to check keyboard-interactive authentication for \(PAMStacks.describe(use)) (--sshd-config FILE)")
            return
        }
        for file in config.unreadable { report.warning("cannot read \(file), included by \(sshdConfig)") }
        let after = "then check with sshd -t and reload sshd (keep a root session open)"
        func overridden(_ keyword: String) -> String {
            let later = config.ignored(keyword)
            guard !later.isEmpty else { return "" }
            return "; the later line\(later.count == 1 ? "" : "s") \(later.map { "\($0.location) (\($0.value))" }.joined(separator: ", ")) ha\(later.count == 1 ? "s" : "ve") no effect: sshd takes the first value"
        }
        let service = "sshd (PAM service \(PAMStacks.describe(use)))"

        if let usePAM = config.first("usepam") {
            if usePAM.value.lowercased() == "yes" {
                report.ok("\(usePAM.location): UsePAM yes")
            } else {
                report.error("\(usePAM.location): UsePAM \(usePAM.value): \(service) never runs the PAM stack; change this line to UsePAM yes\(overridden("usepam")); \(after)")
            }
        } else {
            report.error("\(sshdConfig): UsePAM is not set (sshd's default is no): \(service) never runs the PAM stack; add UsePAM yes before any Include or Match line; \(after)")
        }

        if let kbd = config.first("kbdinteractiveauthentication") {
            if kbd.value.lowercased() == "yes" {
                report.ok("\(kbd.location): KbdInteractiveAuthentication yes")
            } else {
                report.error("\(kbd.location): KbdInteractiveAuthentication \(kbd.value): \(service) never asks for the code; change this line to yes\(overridden("kbdinteractiveauthentication")); \(after)")
            }
        } else {
            report.ok("\(sshdConfig): KbdInteractiveAuthentication not set (sshd's default: yes)")
        }

        if let methods = config.first("authenticationmethods") {
            let lists = methods.value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { $0.split(separator: ",").map { $0.lowercased() } }
            let asks = { (list: [String]) in list.contains { $0 == "keyboard-interactive" || $0.hasPrefix("keyboard-interactive:") } }
            if methods.value.lowercased() == "any" || lists.allSatisfy({ !asks($0) }) {
                report.error("\(methods.location): AuthenticationMethods \(methods.value) never asks keyboard-interactive: \(service) logs users in without the code; use AuthenticationMethods publickey,keyboard-interactive (key + code)\(overridden("authenticationmethods")); \(after)")
            } else if !lists.allSatisfy(asks) {
                report.warning("\(methods.location): AuthenticationMethods \(methods.value) has a list without keyboard-interactive: users who complete it skip the code\(overridden("authenticationmethods"))")
            } else if !config.ignored("authenticationmethods").isEmpty {
                report.warning("\(methods.location): AuthenticationMethods \(methods.value)\(overridden("authenticationmethods"))")
            } else {
                report.ok("\(methods.location): AuthenticationMethods \(methods.value)")
            }
        } else {
            report.warning("\(sshdConfig): without AuthenticationMethods, public-key logins skip PAM auth (and the code); add AuthenticationMethods publickey,keyboard-interactive (see README); \(after)")
        }
    }
}

/// One line of a PAM service file: `type control module [arguments]`, with `[...]` controls
/// and bracketed arguments.
struct PAMRule {
    var type: String
    var control: String
    var module: String
    var arguments: [String]

    init?(parsing line: String) {
        var words: [String] = []
        var current = ""
        var depth = 0
        for character in line {
            if depth == 0, character == "#" { break }
            if character == "[" { depth += 1; if depth == 1 { continue } }
            if character == "]", depth > 0 { depth -= 1; if depth == 0 { continue } }
            if depth == 0, character == " " || character == "\t" {
                if !current.isEmpty { words.append(current); current = "" }
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        var type = words.first ?? ""
        if type.hasPrefix("-") { type.removeFirst() }
        guard words.count >= 3 else { return nil }
        self.type = type
        control = words[1]
        module = words[2]
        arguments = Array(words.dropFirst(3))
    }
}
