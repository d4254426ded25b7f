import Foundation
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// securotpd's settings: `/etc/securotp/securotpd.conf` (same `key = value` format as the
/// module's), then `SECUROTPD_<KEY>` environment variables, then command-line flags — each
/// overriding the one before. Unknown keys and bad values are errors naming where they came
/// from; `validate()` refuses combinations that would be unsafe (plain HTTP off loopback).
public struct DaemonConfiguration: Sendable {
    public enum Listen: Sendable, Equatable, CustomStringConvertible {
        case tcp(host: String, port: Int)
        case unix(path: String)

        public var description: String {
            switch self {
            case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .unix(let path): "unix:\(path)"
            }
        }

        /// Plain HTTP is allowed only where nobody else can listen in.
        var isLocal: Bool {
            switch self {
            case .unix: true
            case .tcp(let host, _): LoopbackHost.contains(host)
            }
        }
    }

    public static let defaultPath = "/etc/securotp/securotpd.conf"

    public var listen = Listen.tcp(host: "127.0.0.1", port: 8443)
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// Clients must present a certificate signed by this CA (mutual TLS), besides their credential.
    public var tlsClientCA: String?
    /// SQLite store paths, verification policy and the token limit (the keys the module's
    /// configuration uses for the same things).
    public var store = Settings()
    /// `database = postgres://…`: PostgreSQL instead of the SQLite store.
    public var postgresURL: String?
    public var hostRequestsPerSecond = 200
    public var userVerificationsPerMinute = 30
    /// `rate_limit_web`: requests per minute per client address on the routes without a
    /// credential (`/v1/web/*`); 0 turns it off.
    public var webRequestsPerMinute = 60
    /// `rate_limit_device`: requests per minute per device credential (or phone session) on
    /// the device routes (`/v1/device/*`); 0 turns it off.
    public var deviceRequestsPerMinute = 60
    /// `metrics = no` turns Prometheus metrics off wherever `metrics_listen` points.
    public var metrics = true
    /// Where `/metrics` is served (plain HTTP, no credential): a listener of its own, loopback
    /// by default, never the API's; nil (`metrics_listen = no`) serves none.
    public var metricsListen: Listen? = Self.defaultMetricsListen
    public static let defaultMetricsListen = Listen.tcp(host: "127.0.0.1", port: 8444)
    /// `metrics_listen` was set (file, environment or flag): a listener that cannot bind then
    /// stops securotpd; the default one is given up with a warning instead, so that a second
    /// node on the same machine starts (metricsListenInUse).
    public private(set) var metricsListenGiven = false
    public var auditRetentionDays = 365
    /// Push approval (docs/push.md): `push_limit`, `push_limit_interval`, `push_lifetime`, `activation_lifetime`,
    /// `device_pin`, `device_pin_min`, `device_pin_max`.
    public var push = PushPolicy()
    /// `push_waiters`: long-polls (hosts' and devices') held at once at most.
    public var maxPushWaiters = 10_000
    /// `idle_timeout`: seconds a connection may sit without a request in progress (before its
    /// first head, between requests, or dribbling one) before it is closed. A request being
    /// answered — a parked long-poll too — is never cut by it.
    public var idleTimeoutSeconds = 60
    /// How long `/v1/health` waits for the store before answering 503 (StoreHealth).
    public var healthTimeoutSeconds = 2
    /// Wake-up hooks (docs/push.md, "Wake-up hooks"): `push_hook_url` is POSTed ntfy style and
    /// `push_hook_command` run, without the number or the nonce, when a push request is stored.
    public var pushHookURL: PushHookURL?
    public var pushHookCommand: String?
    public var logLevel = "info"

    public init() {}

    /// Keys of the module's configuration that mean the same here.
    static let storeKeys: Set<String> = ["key_file", "window", "hotp_lookahead", "resync_window", "next_code_after", "deny",
                                         "unlock_time", "max_tokens"]
    public static let keys: [String] = ["listen", "tls_cert", "tls_key", "tls_client_ca", "state_dir", "database", "rate_limit_host",
                                        "rate_limit_user", "metrics", "metrics_listen", "audit_retention_days", "log_level",
                                        "push_limit", "push_lifetime", "activation_lifetime", "device_pin", "device_pin_min", "device_pin_max",
                                        "push_waiters", "idle_timeout", "push_hook_url", "push_hook_command", "public_url", "rate_limit_web",
                                        "push_limit_interval", "rate_limit_device", "health_timeout"] + storeKeys.sorted()

    public mutating func apply(key: String, value: String, origin: String) throws(ServiceError) {
        func fail(_ expectation: String) -> ServiceError {
            ServiceError(.config, "\(origin): \(ConfigFile.shown(key: key)): \(expectation) (got \(TerminalText.quoted(value)))")
        }
        func integer(_ range: ClosedRange<Int>) throws(ServiceError) -> Int {
            guard let number = Int(value), range.contains(number) else { throw fail("expected a whole number \(range.lowerBound)–\(range.upperBound)") }
            return number
        }
        func path() throws(ServiceError) -> String {
            guard value.hasPrefix("/") else { throw fail("expected an absolute path") }
            return value
        }
        switch key {
        case "listen":
            guard let parsed = Self.parseListen(value) else { throw fail("expected HOST:PORT, [IPv6]:PORT or unix:/PATH") }
            listen = parsed
        case "tls_cert": tlsCertificate = try path()
        case "tls_key": tlsKey = try path()
        case "tls_client_ca": tlsClientCA = try path()
        case "state_dir":
            let keyFile = store.paths.keyFile
            let explicitKey = keyFile != StorePaths.defaultKeyFile
            store.paths = StorePaths(stateDirectory: try path())
            if explicitKey { store.paths.keyFile = keyFile }
        case "database":
            if value.hasPrefix("postgres://") || value.hasPrefix("postgresql://") {
                postgresURL = value
            } else {
                store.paths.database = try path()
            }
        case "rate_limit_host": hostRequestsPerSecond = try integer(0...1_000_000)
        case "rate_limit_user": userVerificationsPerMinute = try integer(0...100_000)
        case "rate_limit_web": webRequestsPerMinute = try integer(0...100_000)
        case "rate_limit_device": deviceRequestsPerMinute = try integer(0...100_000)
        case "metrics":
            switch value.lowercased() {
            case "yes", "true", "on", "1": metrics = true
            case "no", "false", "off", "0": metrics = false
            default: throw fail("expected yes or no")
            }
        case "metrics_listen":
            metricsListenGiven = true
            if ["no", "off", "false", "none"].contains(value.lowercased()) {
                metricsListen = nil
            } else {
                guard let parsed = Self.parseListen(value) else { throw fail("expected HOST:PORT, [IPv6]:PORT, unix:/PATH or no") }
                metricsListen = parsed
            }
        case "audit_retention_days": auditRetentionDays = try integer(0...36_500)
        case "push_limit": push.limit = try integer(0...1000)
        case "push_limit_interval": push.limitInterval = Int64(try integer(30...3600))
        case "push_lifetime": push.requestLifetime = Int64(try integer(10...600))
        case "activation_lifetime": push.activationLifetime = Int64(try integer(60...604_800))
        case "device_pin":
            switch value.lowercased() {
            case "yes", "true", "on", "1", "required": push.pinRequired = true
            case "no", "false", "off", "0", "optional": push.pinRequired = false
            default: throw fail("expected yes or no")
            }
        case "device_pin_min": push.pinMinLength = try integer(4...64)
        case "device_pin_max": push.pinMaxLength = try integer(4...64)
        case "push_waiters": maxPushWaiters = try integer(1...1_000_000)
        case "idle_timeout": idleTimeoutSeconds = try integer(1...3600)
        case "health_timeout": healthTimeoutSeconds = try integer(1...60)
        case "push_hook_url":
            if value.isEmpty || value.lowercased() == "no" {
                pushHookURL = nil
            } else {
                guard let url = PushHookURL(value) else {
                    throw fail("expected an https:// URL (http:// only to loopback), {user} standing for the user's name")
                }
                pushHookURL = url
            }
        case "push_hook_command":
            pushHookCommand = value.isEmpty || value.lowercased() == "no" ? nil : try path()
        case "public_url":
            switch PublicURL.parse(value) {
            case .success(let url): push.publicURL = url
            case .failure(let error): throw ServiceError(.config, "\(origin): \(error.message)")
            }
        case "log_level":
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(value) else {
                throw fail("expected trace, debug, info, notice, warning, error or critical")
            }
            logLevel = value
        case _ where Self.storeKeys.contains(key):
            do throws(StoreError) {
                try store.apply(key: key, value: value, origin: .argument)
            } catch {
                throw ServiceError(.config, "\(origin): \(error.message.replacingOccurrences(of: "module argument ", with: ""))")
            }
        default:
            throw ServiceError(.config, "\(origin): \(ConfigFile.shown(key: key)): unknown setting; securotpd knows \(Self.keys.joined(separator: ", ")) (docs/validator.md)")
        }
    }

    /// Reads the configuration file: owner-only, like the module's (it names the key file and
    /// the database). A missing file at the default path is fine; a named one must exist.
    public mutating func load(path: String, required: Bool) throws(ServiceError) {
        let bytes: [UInt8]
        do throws(StoreError) {
            bytes = try FileSecurity.contents(of: path, .secret, maxSize: 64 * 1024)
        } catch where error.code == .missing && !required {
            return
        } catch {
            throw ServiceError(.config, error.message)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw ServiceError(.config, "\(path): not UTF-8 text") }
        let entries: [ConfigFile.Entry]
        do throws(StoreError) { entries = try ConfigFile.entries(text, path: path) } catch { throw ServiceError(.config, error.message) }
        for entry in entries { try apply(key: entry.key, value: entry.value, origin: "\(path):\(entry.line)") }
    }

    /// `SECUROTPD_LISTEN=…` and so on, for every key.
    public mutating func applyEnvironment(_ environment: [String: String]) throws(ServiceError) {
        for key in Self.keys {
            if let value = environment["SECUROTPD_" + key.uppercased()], !value.isEmpty {
                try apply(key: key, value: value, origin: "environment SECUROTPD_\(key.uppercased())")
            }
        }
    }

    public var usesTLS: Bool { tlsCertificate != nil }

    /// Refuses what would be unsafe or cannot work, before anything listens.
    public func validate() throws(ServiceError) {
        if (tlsCertificate == nil) != (tlsKey == nil) { throw ServiceError(.config, "tls_cert and tls_key go together; give both or neither") }
        if !usesTLS, !listen.isLocal {
            throw ServiceError(.config, "listen = \(TerminalText.quoted(listen.description)) without TLS: plain HTTP is allowed only on loopback or a Unix socket; set tls_cert and tls_key")
        }
        if metrics, let metricsListen, metricsListen == listen, !Self.picksPort(listen) {
            throw ServiceError(.config, "metrics_listen = \(metricsListen) is the API's listen address; give metrics a listener of its own (default \(Self.defaultMetricsListen)) or set metrics_listen = no")
        }
        if push.pinMinLength > push.pinMaxLength {
            throw ServiceError(.config, "device_pin_min (\(push.pinMinLength)) is above device_pin_max (\(push.pinMaxLength))")
        }
        if tlsClientCA != nil, !usesTLS { throw ServiceError(.config, "tls_client_ca needs TLS (tls_cert and tls_key)") }
        if let tlsKey {
            do throws(StoreError) { try FileSecurity.check(tlsKey, .secret) } catch { throw ServiceError(.config, "tls_key: \(error.message)") }
        }
        if let pushHookCommand {
            // The daemon runs it with every login's user and host: whoever may change the file,
            // or a directory above it, runs code as the daemon. Checked here so a bad setting
            // stops the start, and again before every run (PushWakeHooks.run).
            do throws(StoreError) { try FileSecurity.checkProgram(pushHookCommand) } catch {
                throw ServiceError(.config, "push_hook_command: \(error.message)")
            }
        }
        for file in [tlsCertificate, tlsClientCA].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: file) {
            throw ServiceError(.config, "\(TerminalText.quoted(file)) cannot be read")
        }
    }

    /// Port 0: the kernel picks a free port for each listener, so two can share the line.
    private static func picksPort(_ listen: Listen) -> Bool {
        if case .tcp(_, 0) = listen { return true }
        return false
    }

    /// The metrics listener securotpd runs, if any.
    public var servedMetricsListen: Listen? { metrics ? metricsListen : nil }

    /// Before anything listens: whether the metrics listener's TCP address is taken (another
    /// securotpd on this machine, usually). A given `metrics_listen` that is taken is a
    /// configuration error naming the setting; the default is dropped and the warning returned.
    public mutating func checkMetricsListener() throws(ServiceError) -> String? {
        guard let listen = servedMetricsListen, case .tcp(let host, let port) = listen, port != 0,
              !Self.bindable(host: host, port: port) else { return nil }
        guard metricsListenGiven else {
            metricsListen = nil
            return """
                metrics_listen (default \(listen)) is in use, by another securotpd on this machine perhaps: this node serves no \
                metrics; give each node its own metrics_listen = HOST:PORT in securotpd.conf, or metrics_listen = no
                """
        }
        throw ServiceError(.config, """
            metrics_listen = \(listen): the address is in use (another securotpd on this machine?); give each node its own \
            metrics_listen = HOST:PORT, or metrics_listen = no
            """)
    }

    /// A TCP socket can be bound to the address now (SO_REUSEADDR, as the listener binds it).
    private static func bindable(host: String, port: Int) -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return true } // the listener says why
        defer { freeaddrinfo(found) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        return bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 || errno != EADDRINUSE
    }

    static func parseListen(_ text: String) -> Listen? {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            return path.hasPrefix("/") ? .unix(path: path) : nil
        }
        let host: String
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else { return nil }
        return .tcp(host: host, port: port)
    }
}
