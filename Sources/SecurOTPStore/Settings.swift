import CPosix
import SecurOTPCore

/// Every setting of the PAM module and the CLI, read from `securotp.conf` (`key = value`,
/// `#` comments) and overridden by module arguments (`key=value` or a bare flag). One setter
/// serves both, so a key means the same everywhere; unknown keys and bad values are errors
/// that name the file and line (docs/design.md, "Configuration").
public struct Settings: Sendable, Equatable {
    public var paths = StorePaths()
    public var policy = VerifyPolicy()
    public var prompt = "Verification code: "
    public var nullok = false
    public var groups = GroupRule()
    public var tryFirstPass = false
    public var useFirstPass = false
    public var forwardPass = false
    public var debug = false
    public var maxTokens = 10
    /// Remote mode (`validator=` and its companions); disabled by default.
    public var remote = ValidatorSettings()
    /// FIDO security keys (`origin`, `cue_prompt` and pam_u2f's options; docs/fido.md).
    public var fido = FidoSettings()
    /// `methods = fido,push,otp`: the methods users may use, in order; nil: LoginMethods.standard
    /// (per-group and per-user policies in the store come first; LoginMethods.resolve).
    public var methods: LoginMethods?

    public init() {}

    /// Where one setting came from, for error messages.
    public enum Origin: Sendable {
        case file(path: String, line: Int)
        case argument

        func describe(_ key: String) -> String {
            switch self {
            case .file(let path, let line): "\(path):\(line): \(ConfigFile.shown(key: key))"
            case .argument: "module argument \(ConfigFile.shown(key: key))"
            }
        }
    }

    /// Keys only module arguments (or the CLI's flags) may set: they choose the files.
    static let locationKeys: Set<String> = ["conf", "state_dir"]

    public mutating func apply(key: String, value: String?, origin: Origin) throws(StoreError) {
        func fail(_ expectation: String) -> StoreError {
            StoreError(.config, "\(origin.describe(key)): \(expectation) (got \(TerminalText.quoted(value ?? "")))")
        }
        func integer(_ range: ClosedRange<Int>) throws(StoreError) -> Int {
            guard let value, let number = Int(value), range.contains(number) else {
                throw fail("expected a whole number \(range.lowerBound)–\(range.upperBound)")
            }
            return number
        }
        func flag() throws(StoreError) -> Bool {
            guard let value else { return true } // bare module argument: `nullok`
            switch value.lowercased() {
            case "yes", "true", "on", "1": return true
            case "no", "false", "off", "0": return false
            default: throw fail("expected yes or no")
            }
        }
        func path() throws(StoreError) -> String {
            guard let value, value.hasPrefix("/") else { throw fail("expected an absolute path") }
            return value
        }
        func allowed() throws(StoreError) -> Bool {
            guard let value, value == "allow" || value == "deny" else { throw fail("expected allow or deny") }
            return value == "allow"
        }

        switch key {
        case "database": paths.database = try path()
        case "key_file": paths.keyFile = try path()
        case "prompt":
            guard let value, !value.isEmpty, value.utf8.count <= 200 else { throw fail("expected 1–200 characters") }
            // The file's values are trimmed; a prompt still ends in one space before the answer.
            prompt = value.hasSuffix(" ") ? value : value + " "
        case "window": policy.window = try integer(0...10)
        case "hotp_lookahead": policy.hotpLookahead = try integer(0...100)
        case "resync_window": policy.resyncWindow = try integer(0...1000)
        case "next_code_after": policy.nextCodeAfter = try integer(0...100)
        case "deny": policy.deny = try integer(0...1000)
        case "unlock_time": policy.unlockTime = Int64(try integer(0...31_536_000))
        case "nullok": nullok = try flag()
        case "groups":
            guard let value, let rule = GroupRule(parsing: value) else { throw fail("expected group names separated by commas, ! to exclude") }
            groups = rule
        case "try_first_pass": tryFirstPass = try flag()
        case "use_first_pass": useFirstPass = try flag()
        case "forward_pass": forwardPass = try flag()
        case "debug": debug = try flag()
        case "max_tokens": maxTokens = try integer(1...100)
        case "validator":
            guard let value, let address = ValidatorAddress(parsing: value) else {
                throw fail("expected https://HOST:PORT (http:// only on 127.0.0.1, ::1 or localhost), or unix:/PATH")
            }
            remote.address = address
        case "host_credential": remote.hostCredential = try path()
        case "offline_cache": remote.offlineCache = try path()
        case "ca_file": remote.caFile = try path()
        case "client_cert": remote.clientCertificate = try path()
        case "client_key": remote.clientKey = try path()
        case "timeout": remote.timeout = try integer(ValidatorSettings.timeoutRange)
        case "origin":
            guard let value, FidoSettings.validOrigin(value) else { throw fail("expected an RP ID such as pam://host (printable, no spaces or commas)") }
            fido.origin = value
        case "cue_prompt":
            guard let value, !value.isEmpty, value.utf8.count <= 200 else { throw fail("expected 1–200 characters") }
            fido.cuePrompt = value
        // pam_u2f's options with the same meaning (docs/fido.md, "pam_u2f options").
        case "cue": fido.cue = try flag()
        case "nouserok": nullok = try flag()
        case "appid":
            guard let value, FidoSettings.validOrigin(value) else { throw fail("expected an RP ID such as pam://host (printable, no spaces or commas)") }
            fido.appID = value
        case "authfile":
            guard let value, value.hasPrefix("/") else {
                throw fail("expected an absolute path to a root-owned mapping file (a path relative to the home directory is not read)")
            }
            fido.authFile = value
        case "userpresence": fido.userPresence = value == "-1" ? nil : try flag()
        case "userverification": fido.userVerification = value == "-1" ? nil : try flag()
        case "pinverification": fido.pinVerification = value == "-1" ? nil : try flag()
        case "max_devices": fido.maxDevices = try integer(FidoSettings.maxDevicesRange)
        case "failmode":
            guard let value, let mode = FailMode(rawValue: value) else { throw fail("expected secure or safe") }
            remote.failMode = mode
        case "push_timeout": remote.pushTimeout = try integer(ValidatorSettings.pushTimeoutRange)
        case "device_ca": remote.deviceCA = try path()
        case "push_offline": remote.pushOffline = try allowed()
        case "device_uv":
            guard let value, let rule = DeviceUserVerification(rawValue: value) else { throw fail("expected required or optional") }
            remote.deviceUserVerification = rule
        case "push_web": remote.pushWeb = try allowed()
        case "device_revoked": remote.deviceRevoked = try path()
        case "device_cert_expiry":
            guard let value, let rule = DeviceCertificateExpiry(rawValue: value) else { throw fail("expected required or optional") }
            remote.deviceCertificateExpiry = rule
        case "validator_may":
            guard let value, let rule = ValidatorMay(rawValue: value) else { throw fail("expected approve or deny-only") }
            remote.validatorMay = rule
        case "web_origin":
            guard let value, ClientData.webRPID(origin: value) != nil else {
                throw fail("expected the validator's public_url origin, https://HOST[:PORT] (lowercase, no path)")
            }
            remote.webOrigin = value
        case "methods":
            guard let value, let order = LoginMethods(parsing: value) else { throw fail(LoginMethods.expectation) }
            methods = order
        default:
            if let why = FidoSettings.unsupportedPamU2FOption(key) { throw StoreError(.config, "\(origin.describe(key)): \(why)") }
            throw StoreError(.config, "\(origin.describe(key)): unknown setting; see pam_securotp(8) or docs/configuration.md")
        }
    }

    /// Reads a configuration file's text. A missing file at the default location is fine
    /// (defaults apply); a named file that is missing is an error.
    public mutating func apply(fileText: String, path: String) throws(StoreError) {
        for entry in try ConfigFile.entries(fileText, path: path) {
            if Self.locationKeys.contains(entry.key) {
                throw StoreError(.config, "\(path):\(entry.line): \(ConfigFile.shown(key: entry.key)) can only be given as a module argument or command-line option")
            }
            try apply(key: entry.key, value: entry.value, origin: .file(path: path, line: entry.line))
        }
    }

    /// Loads the configuration file (`paths.config`), checking its owner and mode.
    public mutating func load(configRequired: Bool) throws(StoreError) {
        let bytes: [UInt8]
        do {
            // Owner-only like the key: it says who is exempt (nullok, groups=) and where the keys are.
            bytes = try FileSecurity.contents(of: paths.config, .secret, maxSize: 64 * 1024)
        } catch where error.code == .missing {
            if !configRequired { return }
            throw StoreError(.config, "configuration file \(paths.config) does not exist")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw StoreError(.config, "\(paths.config): not UTF-8 text")
        }
        try apply(fileText: text, path: paths.config)
    }

    /// Module arguments: `conf=` and `state_dir=` choose the files, the file is read, then the
    /// other arguments override it. Within the arguments (as within the file) a key is given
    /// once: `nullok nullok=no` is an error, not "the last one wins".
    public static func fromModuleArguments(_ arguments: [String]) throws(StoreError) -> Settings {
        var settings = Settings()
        var configRequired = false
        var overrides: [(String, String?)] = []
        var given: [String] = []
        for argument in arguments {
            let key: String
            let value: String?
            if let equals = argument.firstIndex(of: "=") {
                key = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            } else {
                key = argument
                value = nil
            }
            guard !given.contains(key) else {
                throw StoreError(.config, "module argument \(ConfigFile.shown(key: key)) is given twice; give each key once")
            }
            given.append(key)
            switch key {
            case "state_dir":
                guard let value, value.hasPrefix("/") else { throw StoreError(.config, "module argument state_dir: expected an absolute path") }
                let config = settings.paths.config
                settings.paths = StorePaths(stateDirectory: value)
                if configRequired { settings.paths.config = config }
            case "conf":
                guard let value, value.hasPrefix("/") else { throw StoreError(.config, "module argument conf: expected an absolute path") }
                settings.paths.config = value
                configRequired = true
            default:
                overrides.append((key, value))
            }
        }
        try settings.load(configRequired: configRequired)
        for (key, value) in overrides { try settings.apply(key: key, value: value, origin: .argument) }
        if settings.useFirstPass && settings.forwardPass {
            throw StoreError(.config, "module arguments use_first_pass and forward_pass exclude each other")
        }
        try settings.remote.validate()
        // Both would take the validator's word for a way in: that a user holds no factor, or
        // an answer that makes it look unreachable. deny-only promises it can only deny.
        if settings.remote.isEnabled, settings.remote.validatorMay == .denyOnly {
            if settings.nullok {
                throw StoreError(.config, "validator_may=deny-only cannot go with nullok: the validator would decide who skips the second factor")
            }
            if settings.remote.failMode == .safe {
                throw StoreError(.config, "validator_may=deny-only cannot go with failmode=safe: a validator that does not answer would let users in")
            }
        }
        return settings
    }
}

/// `key = value` lines, `#` comments and blank lines: the format of securotp.conf and
/// securotpd.conf. Keys and values are trimmed; what a key means is the reader's business.
/// A key is given once per file: a second line with the same key is an error naming both
/// lines, never "the last one wins" (issue 12 §7).
public enum ConfigFile {
    public struct Entry: Sendable, Equatable {
        public let key: String
        public let value: String
        public let line: Int
    }

    public static func entries(_ text: String, path: String) throws(StoreError) -> [Entry] {
        var entries: [Entry] = []
        var firstLine: [String: Int] = [:]
        var lineNumber = 0
        for rawLine in TextLines.split(text) {
            lineNumber += 1
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw StoreError(.config, "\(path):\(lineNumber): expected key = value")
            }
            let key = line[..<equals].trimmingSpaces
            if let first = firstLine[key] {
                throw StoreError(.config, "\(path):\(lineNumber): \(shown(key: key)) was already given at line \(first); give each key once (remove one of the two lines)")
            }
            firstLine[key] = lineNumber
            entries.append(Entry(key: key, value: line[line.index(after: equals)...].trimmingSpaces, line: lineNumber))
        }
        return entries
    }

    /// A key as an error message shows it: a key that could be one (letters, digits, `_`, at
    /// most 32 characters) as it is, anything else as a short escaped excerpt.
    public static func shown(key: String) -> String {
        let plain = key.utf8.count <= 32 && key.utf8.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f
        }
        return plain && !key.isEmpty ? key : TerminalText.quoted(key)
    }
}

/// `groups=wheel,admins,!contractors`: a user in an excluded group, or in none of the included
/// groups (when any are listed), is outside the rule. Patterns may use shell wildcards.
public struct GroupRule: Sendable, Equatable {
    public var include: [String] = []
    public var exclude: [String] = []

    public init() {}

    public init?(parsing text: String) {
        for item in text.split(separator: ",") {
            let name = item.trimmingSpaces
            if name.hasPrefix("!") {
                let excluded = String(name.dropFirst())
                guard !excluded.isEmpty else { return nil }
                exclude.append(excluded)
            } else {
                guard !name.isEmpty else { return nil }
                include.append(name)
            }
        }
        if include.isEmpty && exclude.isEmpty { return nil }
    }

    public var isEmpty: Bool { include.isEmpty && exclude.isEmpty }

    public func covers(groups: [String]) -> Bool {
        func matches(_ pattern: String) -> Bool { groups.contains { fnmatch(pattern, $0, 0) == 0 } }
        if exclude.contains(where: matches) { return false }
        return include.isEmpty || include.contains(where: matches)
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" && $0 != "\r" }),
              let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" && $0 != "\r" })
        else { return "" }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars[first...last])
        return String(out)
    }
}
