import ArgumentParser
import CPosix
import Glibc
import SecurOTPCore
import SecurOTPStore

/// Checks a configuration and the PAM stacks before an admin relies on them.
struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check configuration, file permissions and the PAM stacks that use pam_securotp.",
        discussion: """
        Prints one line per finding (ok / warning / error) with advice, and exits 78 (EX_CONFIG) when any error was found. Run it after every change to /etc/pam.d or securotp.conf, and keep a root shell open until a test login works.
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
        func ok(_ text: String) { print("ok       \(text)") }
        func warning(_ text: String) { warnings += 1; print("warning  \(text)") }
        func error(_ text: String) { errors += 1; print("error    \(text)") }
    }

    func run() throws {
        let report = Report()
        var settings = Settings()
        do {
            let context = try CommandContext(global)
            settings = context.settings
            report.ok("configuration \(settings.paths.config) (missing is fine: defaults apply)")
        } catch let error as StoreError {
            report.error(error.message)
        }
        checkStore(settings, report)
        let stacks = checkStacks(report)
        if stacks.contains("sshd") { checkSSHD(report) }
        if stacks.isEmpty {
            report.warning("no PAM service in \(pamDirectory) uses pam_securotp yet; see README \"Deploy\" for sshd and sudo")
        }
        print("\n\(report.errors) error\(report.errors == 1 ? "" : "s"), \(report.warnings) warning\(report.warnings == 1 ? "" : "s").")
        if report.errors > 0 { throw ExitCode(78) }
    }

    private func checkStore(_ settings: Settings, _ report: Report) {
        let paths = settings.paths
        for (path, what) in [(paths.keyFile, "key file"), (paths.database, "database")] {
            do {
                try FileSecurity.check(path, .secret)
                report.ok("\(what) \(path) is owner-only")
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
            let locked = try store.lockedUsers(now: Int64(time(nil))).filter { $0 != Store.unresolvedUsersKey }
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

    /// Returns the names of services that use the module.
    private func checkStacks(_ report: Report) -> [String] {
        guard let directory = opendir(pamDirectory) else {
            report.warning("cannot read \(pamDirectory)")
            return []
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(name) }
        }
        var services: [String] = []
        for service in names.sorted() {
            let path = pamDirectory + "/" + service
            guard let text = try? FileSecurity.contents(of: path, .policy, maxSize: 1 << 20),
                  let content = String(validating: text, as: UTF8.self), content.contains("pam_securotp") else { continue }
            services.append(service)
            for (index, line) in content.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard let rule = PAMRule(parsing: String(line)), rule.module.contains("pam_securotp") else { continue }
                check(rule, at: "\(path):\(index + 1)", report)
            }
        }
        return services
    }

    private func check(_ rule: PAMRule, at location: String, _ report: Report) {
        if rule.type != "auth" {
            report.error("\(location): pam_securotp implements only 'auth' (found '\(rule.type)')")
            return
        }
        switch rule.control {
        case "sufficient":
            report.error("\(location): 'sufficient' lets a code alone log users in; use 'required' (after the password module) or 'requisite'")
        case "optional":
            report.warning("\(location): 'optional' does not enforce the second factor")
        default:
            report.ok("\(location): auth \(rule.control)")
        }
        let path = rule.module.hasPrefix("/") ? rule.module : moduleDirectories.map { $0 + "/" + rule.module }.first { access($0, R_OK) == 0 } ?? ""
        if path.isEmpty || access(path, R_OK) != 0 {
            report.error("\(location): module \(rule.module) not found; install it (make install) or give its absolute path")
        }
        do {
            let settings = try Settings.fromModuleArguments(rule.arguments)
            if settings.nullok { report.warning("\(location): nullok lets users without a token skip the second factor (PAM_IGNORE)") }
            if !settings.groups.isEmpty { report.ok("\(location): second factor only for groups \(rule.arguments.first { $0.hasPrefix("groups=") } ?? "")") }
            if settings.forwardPass { report.ok("\(location): forward_pass: the next auth module must use use_first_pass or try_first_pass") }
        } catch {
            report.error("\(location): \(error.message)")
        }
    }

    private func checkSSHD(_ report: Report) {
        guard let bytes = try? FileSecurity.contents(of: sshdConfig, .policy, maxSize: 1 << 20), let text = String(validating: bytes, as: UTF8.self) else {
            report.warning("cannot read \(sshdConfig) to check keyboard-interactive authentication")
            return
        }
        var settings: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, !words[0].hasPrefix("#") else { continue }
            let key = words[0].lowercased()
            if key == "match" { break } // first value wins, and Match blocks are per-connection
            if settings[key] == nil { settings[key] = words[1].lowercased() }
        }
        if settings["usepam"] != "yes" { report.error("\(sshdConfig): UsePAM yes is needed for sshd to run the PAM stack") }
        let kbd = settings["kbdinteractiveauthentication"] ?? settings["challengeresponseauthentication"] ?? "yes"
        if kbd != "yes" { report.error("\(sshdConfig): set KbdInteractiveAuthentication yes so sshd can ask for the code") }
        if let methods = settings["authenticationmethods"] {
            report.ok("\(sshdConfig): AuthenticationMethods \(methods)")
        } else {
            report.warning("\(sshdConfig): without AuthenticationMethods, public-key logins skip PAM auth (and the code); see README")
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
