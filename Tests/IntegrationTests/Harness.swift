// Test harness for the integration tests: the release artifacts (what `make install` ships) are
// driven as separate processes — `securotp` to provision, `pam-check` to log in through the real
// libpam loading the real libpam_securotp.so from a private service directory — and every code is
// computed by an independent implementation, oathtool.
import Foundation
import Glibc
import Testing

/// A harness failure that explains itself (missing build, missing tool, unexpected output).
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Locating the artifacts

enum Binaries {
    /// <package root>, three levels above this file (Tests/IntegrationTests/Harness.swift).
    static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// SECUROTP_BIN_DIR, else <package root>/.build/release.
    static var directory: String {
        if let value = ProcessInfo.processInfo.environment["SECUROTP_BIN_DIR"], !value.isEmpty { return value }
        return packageRoot + "/.build/release"
    }

    static func path(_ name: String) throws -> String {
        let path = directory + "/" + name
        guard FileManager.default.fileExists(atPath: path) else {
            throw HarnessError("""
                \(path) does not exist: run `swift build -c release` first (`make test` does), \
                or set SECUROTP_BIN_DIR to the directory holding securotp, pam-check and libpam_securotp.so
                """)
        }
        return path
    }

    static func securotp() throws -> String { try path("securotp") }
    static func securotpd() throws -> String { try path("securotpd") }
    static func pamCheck() throws -> String { try path("pam-check") }
    /// SECUROTP_MODULE names the module under test (make test runs the suite for the SwiftPM
    /// build and for the Embedded Swift build); default: libpam_securotp.so in the bin dir.
    static func module() throws -> String {
        if let value = ProcessInfo.processInfo.environment["SECUROTP_MODULE"], !value.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: value) || FileManager.default.fileExists(atPath: value) else {
                throw HarnessError("SECUROTP_MODULE=\(value) does not exist; run make test (it builds pam/embedded/build.sh)")
            }
            return value
        }
        return try path("libpam_securotp.so")
    }
}

/// Debian tools the tests use as independent oracles.
enum Tools {
    static func require(_ path: String, package: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw HarnessError("\(path) not found: install the Debian package \(package) (scripts/install-deps.sh test)")
        }
        return path
    }

    static func oathtool() throws -> String { try require("/usr/bin/oathtool", package: "oathtool") }
    static func zbarimg() throws -> String { try require("/usr/bin/zbarimg", package: "zbar-tools") }
    static func strace() throws -> String { try require("/usr/bin/strace", package: "strace") }
    static func sqlite3() throws -> String { try require("/usr/bin/sqlite3", package: "sqlite3") }
}

// MARK: - Running processes

/// PAM return codes as pam-check reports them in its exit status.
enum PAM {
    static let success: Int32 = 0
    static let serviceError: Int32 = 3
    static let permissionDenied: Int32 = 6
    static let authError: Int32 = 7
    static let authInfoUnavailable: Int32 = 9
    static let maxTries: Int32 = 11
    static let conversationError: Int32 = 19
    static let ignore: Int32 = 25

    /// libpam never hands PAM_IGNORE to the application: a stack whose modules all ignored
    /// fails with PAM_PERM_DENIED. `Sandbox.ignoreProbe` therefore lets an ignoring
    /// pam_securotp fall through to `pam_debug.so auth=maxtries`: exit 11 plus the info line
    /// below means "pam_securotp returned PAM_IGNORE".
    static let ignoreProbeExit = maxTries
    static let ignoreProbeInfo = "auth=maxtries"

    static let defaultPrompt = "Verification code: "
    static let forwardPassPrompt = "Password & verification code: "
    /// pam_exec's prompt when it asks for the password itself (see `Sandbox.firstPassService`).
    static let firstPassPrompt = "Password: "
    static let replayInfo = "That code was already used. Wait for the next one."
}

/// The outcome of one finished process.
struct ProcessResult: CustomStringConvertible, Sendable {
    let command: [String]
    /// The exit status, or 128 + signal number when the process was killed.
    let status: Int32
    let stdout: String
    let stderr: String

    /// stdout split into lines, trailing spaces kept (prompts end in a space).
    var lines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    var stderrLines: [String] {
        stderr.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            .filter { !$0.allSatisfy(\.isWhitespace) }
    }

    private func values(_ prefix: String) -> [String] {
        lines.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// pam-check: the echo-off prompts shown, in order.
    var prompts: [String] { values("prompt: ") }
    /// pam-check: PAM_TEXT_INFO messages.
    var infos: [String] { values("info: ") }
    /// pam-check: the pam_strerror text of the final result.
    var result: String? { values("result: ").last }
    /// pam-check: PAM_ERROR_MSG messages.
    var errors: [String] { values("error: ") }
    /// pam-check with PAM_CHECK_PROCESS=1: threads before pam_start and after pam_end, and
    /// whether libcurl was loaded.
    var threadsBefore: Int? { values("threads-before: ").last.flatMap { Int($0) } }
    var threadsAfter: Int? { values("threads-after: ").last.flatMap { Int($0) } }
    var libcurlLoaded: Bool? { values("libcurl-loaded: ").last.map { $0 == "yes" } }
    /// The conversation alone (prompts and messages), without the process report.
    var conversation: [String] { lines.filter { !$0.hasPrefix("threads-") && !$0.hasPrefix("libcurl-") } }

    var description: String {
        "`\(command.joined(separator: " "))` exited \(status)\n--- stdout:\n\(stdout)--- stderr:\n\(stderr)---"
    }
}

/// A started child process; `wait()` reaps it and collects its output.
final class Child {
    let pid: pid_t
    let command: [String]
    private let outputPath: String
    private let errorPath: String

    fileprivate init(pid: pid_t, command: [String], outputPath: String, errorPath: String) {
        self.pid = pid
        self.command = command
        self.outputPath = outputPath
        self.errorPath = errorPath
    }

    /// What the child wrote to stderr so far (a daemon's log while it runs).
    var errorOutput: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Waits at most `timeout` seconds, then kills the child and fails: a hung login must fail
    /// the test, not the whole run.
    func wait(timeout: Double = 30) throws -> ProcessResult {
        defer {
            unlink(outputPath)
            unlink(errorPath)
        }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR {
                throw HarnessError("waitpid(\(pid)) for \(command.joined(separator: " ")): \(String(cString: strerror(errno)))")
            }
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw HarnessError("\(command.joined(separator: " ")) did not finish within \(Int(timeout)) s; killed")
            }
            usleep(1_000)
        }
        let signal = status & 0x7f
        let code = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        let stdout = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        return ProcessResult(command: command, status: code, stdout: stdout, stderr: stderr)
    }
}

enum Run {
    /// Variables the harness sets itself; never inherited from the test runner's environment.
    /// $TMPDIR (or /tmp) without a trailing slash, so paths in messages compare cleanly.
    static var temporaryDirectory: String {
        var directory = NSTemporaryDirectory()
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        return directory
    }

    static let controlledVariables = ["PAM_CHECK_SILENT", "PAM_CHECK_PROCESS", "SECUROTP_STATE_DIR"]

    /// Starts `executable` with stdin from /dev/null and stdout/stderr captured in temporary
    /// files (no pipes, so no deadlock however much a child writes, and no waiting for EOF).
    static func start(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Child {
        let stem = temporaryDirectory + "/securotp-it-\(UUID().uuidString)"
        let outputPath = stem + ".out"
        let errorPath = stem + ".err"

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var variables = ProcessInfo.processInfo.environment
        for name in controlledVariables { variables[name] = nil }
        variables.merge(environment) { _, new in new }

        let command = [executable] + arguments
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        var code = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        // A file the test wrote is busy while a child another thread forked holds a copy of the
        // writing descriptor; close-on-exec (Sandbox.write) ends that at the child's exec, soon.
        for _ in 0..<40 where code == ETXTBSY {
            usleep(50_000)
            code = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        }
        guard code == 0 else {
            throw HarnessError("cannot start \(executable): \(String(cString: strerror(code)))")
        }
        return Child(pid: pid, command: command, outputPath: outputPath, errorPath: errorPath)
    }

    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        try start(executable, arguments, environment: environment).wait()
    }
}

// MARK: - A private store and PAM service directory per test

/// What `securotp enroll --format json` prints.
struct Enrollment: Decodable, Sendable {
    let serial: String
    let user: String
    let kind: String
    let algorithm: String
    let digits: Int
    let period: Int?
    let counter: Int?
    let uri: String
    let secret: String
}

/// One test's world: a fresh temporary directory holding the state directory (database, key,
/// securotp.conf) and a PAM service directory. Removed when the test drops it.
final class Sandbox {
    let root: String
    let securotp: String
    let pamCheck: String
    let module: String

    /// The default state directory (created by the first enroll, mode 0700).
    var state: String { root + "/state" }
    var pamDirectory: String { root + "/pam.d" }

    init() throws {
        securotp = try Binaries.securotp()
        pamCheck = try Binaries.pamCheck()
        module = try Binaries.module()
        var template = Array((Run.temporaryDirectory + "/securotp-it-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }
        guard let made else { throw HarnessError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        root = made
        guard mkdir(root + "/pam.d", 0o755) == 0 else { throw HarnessError("cannot create \(root)/pam.d") }
    }

    /// Helpers that must live as long as the sandbox (a validator process), stopped first.
    private var companions: [AnyObject] = []

    func keepAlive(_ companion: AnyObject) { companions.append(companion) }

    deinit {
        companions.removeAll()
        try? FileManager.default.removeItem(atPath: root)
    }

    // MARK: files

    func path(_ name: String) -> String { root + "/" + name }

    /// Writes a file with an exact mode (independent of the runner's umask). The descriptor is
    /// close-on-exec: tests run in parallel threads, and a child forked by another thread while
    /// the file is open would otherwise keep it open for writing, so executing the file fails
    /// with ETXTBSY ("Text file busy"). Scripts are still best run as `/bin/sh FILE`, which
    /// only reads the file: a fork's copy lives until its exec, and no flag closes it sooner.
    func write(_ text: String, to path: String, mode: mode_t = 0o644) throws {
        try write(bytes: Array(text.utf8), to: path, mode: mode)
    }

    func write(bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw HarnessError("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw HarnessError("cannot write \(path): \(String(cString: strerror(errno)))") }
            written += count
        }
        guard fchmod(descriptor, mode) == 0 else { throw HarnessError("chmod \(path): \(String(cString: strerror(errno)))") }
    }

    /// DIR/securotp.conf of a state directory (root-owned, 0600 as the docs ask).
    func writeConfig(_ text: String, stateDirectory: String? = nil) throws {
        let directory = stateDirectory ?? state
        if !FileManager.default.fileExists(atPath: directory) {
            guard mkdir(directory, 0o700) == 0 else { throw HarnessError("cannot create \(directory)") }
        }
        try write(text, to: directory + "/securotp.conf", mode: 0o600)
    }

    func mode(of path: String) throws -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { throw HarnessError("stat \(path): \(String(cString: strerror(errno)))") }
        return info.st_mode & 0o7777
    }

    // MARK: the admin CLI

    /// `securotp --state-dir DIR ARGS...`
    func cli(_ arguments: [String], stateDirectory: String? = nil) throws -> ProcessResult {
        try Run.run(securotp, ["--state-dir", stateDirectory ?? state] + arguments)
    }

    /// Enrolls a token and returns the parsed JSON; any failure is a harness error with the output.
    func enroll(_ user: String, _ options: [String] = [], stateDirectory: String? = nil) throws -> Enrollment {
        let result = try cli(["enroll", user] + options + ["--format", "json"], stateDirectory: stateDirectory)
        guard result.status == 0 else { throw HarnessError("enroll failed:\n\(result)") }
        do {
            return try JSONDecoder().decode(Enrollment.self, from: Data(result.stdout.utf8))
        } catch {
            throw HarnessError("enroll printed no valid JSON (\(error)):\n\(result)")
        }
    }

    /// `securotp list USER --format json`, decoded.
    func listTokens(_ user: String, stateDirectory: String? = nil) throws -> [[String: Any]] {
        let result = try cli(["list", user, "--format", "json"], stateDirectory: stateDirectory)
        guard result.status == 0 else { throw HarnessError("list failed:\n\(result)") }
        guard let tokens = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]] else {
            throw HarnessError("list printed no JSON array:\n\(result)")
        }
        return tokens
    }

    // MARK: PAM services

    /// Writes `auth CONTROL /abs/libpam_securotp.so state_dir=DIR ARGS...` (plus any further
    /// lines) as service NAME in the private PAM directory, and returns NAME.
    @discardableResult
    func service(_ name: String = "securotp-it", _ arguments: [String] = [], control: String = "required",
                 stateDirectory: String? = nil, then extraLines: [String] = []) throws -> String {
        let line = (["auth", control, module, "state_dir=" + (stateDirectory ?? state)] + arguments).joined(separator: " ")
        try write(([line] + extraLines).joined(separator: "\n") + "\n", to: pamDirectory + "/" + name)
        return name
    }

    /// A service in which PAM_IGNORE from pam_securotp is observable (see `PAM.ignoreProbeExit`):
    /// success ends the stack, any failure ends it with that failure, ignore falls through.
    @discardableResult
    func ignoreProbe(_ name: String, _ arguments: [String]) throws -> String {
        try service(name, arguments, control: "[success=done ignore=ignore default=die]",
                    then: ["auth requisite pam_debug.so auth=maxtries"])
    }

    /// A service in which an earlier module supplies PAM_AUTHTOK: pam_exec with expose_authtok
    /// prompts "Password: " (answered by the first response) and stores the answer as PAM_AUTHTOK
    /// before pam_securotp runs (libpam refuses pam_set_item(PAM_AUTHTOK) from an application).
    @discardableResult
    func firstPassService(_ name: String, _ arguments: [String]) throws -> String {
        let provider = "auth required pam_exec.so expose_authtok quiet /bin/true"
        let line = (["auth", "required", module, "state_dir=" + state] + arguments).joined(separator: " ")
        try write(provider + "\n" + line + "\n", to: pamDirectory + "/" + name)
        return name
    }

    /// Starts `pam-check --confdir DIR SERVICE USER RESPONSES...`; `process` asks it to report
    /// thread counts and whether libcurl was loaded.
    /// `tries`: pam_authenticate up to that many times on one handle, as sudo does.
    /// `environment`: more for pam-check (PAM_CHECK_RHOST, PAM_CHECK_TTY).
    func startLogin(_ service: String, _ user: String, _ responses: [String] = [], silent: Bool = false, process: Bool = false,
                    tries: Int = 1, environment more: [String: String] = [:], pamCheck program: String? = nil) throws -> Child {
        var environment = more
        if silent { environment["PAM_CHECK_SILENT"] = "1" }
        if tries != 1 { environment["PAM_CHECK_TRIES"] = "\(tries)" }
        if process { environment["PAM_CHECK_PROCESS"] = "1" }
        return try Run.start(program ?? pamCheck, ["--confdir", pamDirectory, service, user] + responses, environment: environment)
    }

    /// One authentication through libpam; the exit status is the PAM code. `pamCheck`: another
    /// copy of pam-check to run (a copy named sudo, for the module's sudo command line).
    func login(_ service: String, _ user: String, _ responses: [String] = [], silent: Bool = false, process: Bool = false,
               tries: Int = 1, environment: [String: String] = [:], pamCheck program: String? = nil) throws -> ProcessResult {
        try startLogin(service, user, responses, silent: silent, process: process, tries: tries, environment: environment,
                       pamCheck: program).wait()
    }
}

// MARK: - The independent oracle

enum Oath {
    /// One oathtool run: a code per line (several with `--window`), each `digits` digits.
    private static func run(_ arguments: [String], digits: Int) throws -> [String] {
        let result = try Run.run(try Tools.oathtool(), arguments)
        let codes = result.stdout.split(separator: "\n").map(String.init)
        guard result.status == 0, !codes.isEmpty,
              codes.allSatisfy({ $0.count == digits && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else {
            throw HarnessError("oathtool gave no \(digits)-digit code:\n\(result)")
        }
        return codes
    }

    private static func totpArguments(_ algorithm: String, _ digits: Int, _ period: Int) -> [String] {
        ["--totp=\(algorithm)", "--base32", "--digits=\(digits)", "--time-step-size=\(period)s"]
    }

    /// TOTP from a base32 secret, now or at a given Unix time.
    static func totp(_ secret: String, algorithm: String = "SHA1", digits: Int = 6, period: Int = 30,
                     at unixTime: Int64? = nil) throws -> String {
        let now = unixTime.map { ["--now=@\($0)"] } ?? []
        return try run(totpArguments(algorithm, digits, period) + now + [secret], digits: digits)[0]
    }

    /// HOTP (SHA-1, as oathtool implements it) for one counter value.
    static func hotp(_ secret: String, counter: UInt64, digits: Int = 6) throws -> String {
        try hotpCodes(secret, first: counter, count: 1, digits: digits)[0]
    }

    /// Codes of the counters `first`…`first + count - 1`, in one oathtool run (`--window`).
    static func hotpCodes(_ secret: String, first counter: UInt64, count: Int, digits: Int = 6) throws -> [String] {
        try run(["--hotp", "--base32", "--digits=\(digits)", "--counter=\(counter)", "--window=\(count - 1)", secret], digits: digits)
    }

    /// Codes of `steps` consecutive TOTP steps from the one holding `unixTime`, in one run.
    static func totpCodes(_ secret: String, algorithm: String = "SHA1", digits: Int = 6, period: Int = 30,
                          from unixTime: Int64, steps: Int) throws -> [String] {
        try run(totpArguments(algorithm, digits, period) + ["--now=@\(unixTime)", "--window=\(steps - 1)", secret], digits: digits)
    }

    /// TOTP codes for the steps a window of ±1 around `unixTime` accepts.
    static func totpWindow(_ secret: String, algorithm: String = "SHA1", digits: Int = 6, period: Int = 30,
                           around unixTime: Int64) throws -> Set<String> {
        Set(try totpCodes(secret, algorithm: algorithm, digits: digits, period: period, from: unixTime - Int64(period), steps: 3))
    }

    /// How far a module looks for a typed code: the look-ahead (10 counters) or window (±1
    /// step), and beyond them the resync range (50) that starts a "next code" dialogue — with room.
    static let reach = 80

    /// A code no HOTP counter from 0 to `reach` produces: a wrong code that can neither log in
    /// nor start a resync dialogue by luck (tests use the first few counters).
    static func wrongHOTP(_ secret: String) throws -> String {
        wrongCode(avoiding: Set(try hotpCodes(secret, first: 0, count: reach)))
    }

    /// A code of no TOTP step within `reach` steps of now.
    static func wrongTOTP(_ secret: String) throws -> String {
        let now = Int64(Clock.now())
        return wrongCode(avoiding: Set(try totpCodes(secret, from: now - Int64(reach * 30), steps: 2 * reach + 1)))
    }

    /// A well-formed code that is none of `valid` (so "wrong code" tests cannot pass by luck).
    static func wrongCode(avoiding valid: Set<String>, digits: Int = 6) -> String {
        var modulus = 1
        for _ in 0..<digits { modulus *= 10 }
        var value = 123_456 % modulus
        while true {
            var code = String(value)
            code = String(repeating: "0", count: digits - code.count) + code
            if !valid.contains(code) { return code }
            value = (value + 1) % modulus
        }
    }
}

// MARK: - Time

enum Clock {
    static func now() -> Double { Date().timeIntervalSince1970 }

    /// The environment of a process whose clock runs `seconds` ahead (Debian's libfaketime,
    /// preloaded: time(), gettimeofday() and clock_gettime(CLOCK_REALTIME) of the process and of
    /// the module it loads), so a test moves time past unlock_time or an expiry instead of
    /// sleeping until it passes. Monotonic clocks are left alone (timeouts stay real). For
    /// pam-check and the module only: the statically linked Swift programs lose their arguments
    /// under it.
    static func ahead(_ seconds: Int) throws -> [String: String] {
        try fakeTime(["FAKETIME": "+\(seconds)s"])
    }

    /// The same for a clock that starts at `unixTime` when the process starts and runs on from
    /// there: a login whose codes were computed for `unixTime`'s step sees that step, whatever
    /// the real clock's position in its own (no waiting for a fresh step).
    static func startingAt(_ unixTime: Int64) throws -> [String: String] {
        try fakeTime(["FAKETIME": "@\(unixTime)", "FAKETIME_FMT": "%s"])
    }

    private static func fakeTime(_ settings: [String: String]) throws -> [String: String] {
        let candidates = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                          "/usr/lib/faketime/libfaketime.so.1"]
        guard let library = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw HarnessError("libfaketime is missing: apt install libfaketime (make test installs it)")
        }
        return settings.merging(["LD_PRELOAD": library, "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1"]) { mine, _ in mine }
    }

    /// If fewer than `margin` seconds remain in the current TOTP step, sleeps into the next one,
    /// so a code computed now is still the current one when the module checks it.
    /// Checks again after waking: a sleeping test may resume late when every worker is busy.
    static func waitForFreshStep(period: Int = 30, margin: Double = 3) async throws {
        while true {
            let remaining = Double(period) - now().truncatingRemainder(dividingBy: Double(period))
            if remaining >= margin { return }
            try await sleep(seconds: remaining + 0.2)
        }
    }

    /// Runs `body(now)` until one run begins and ends in the same step (at most three runs), so
    /// codes a program printed and codes an oracle computed for `now` belong to one step however
    /// slowly the machine runs. `body` must not record expectations: it runs more than once.
    static func inOneStep<R>(period: Int = 30, _ body: (Int64) throws -> R) throws -> R {
        for _ in 0..<3 {
            let start = Int64(now())
            let result = try body(start)
            if Int64(now()) / Int64(period) == start / Int64(period) { return result }
        }
        throw HarnessError("three runs in a row crossed a \(period) s step boundary")
    }

    static func sleep(seconds: Double) async throws {
        try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
    }
}
