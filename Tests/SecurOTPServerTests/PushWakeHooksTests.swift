import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SecurOTPServer
import SecurOTPService
import Testing

/// A local ntfy-like receiver: records every POST it gets; `/fail` answers 500.
actor WakeReceiver {
    struct Received: Sendable {
        let path: String
        let headers: [String: String]
        let body: String
    }

    private(set) var received: [Received] = []

    func record(_ request: Received) { received.append(request) }

    /// Runs `body` with the receiver listening on a loopback port.
    func serve<R: Sendable>(_ body: @Sendable (_ port: Int) async throws -> R) async throws -> R {
        let router = Router()
        router.post("fail") { _, _ -> HTTPResponse.Status in .internalServerError }
        router.post("**") { request, _ -> HTTPResponse.Status in
            let bytes = try await request.body.collect(upTo: 64 * 1024)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }  // lowercase names
            await self.record(Received(path: request.uri.path, headers: headers, body: String(buffer: bytes)))
            return .ok
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        return try await app.test(.live) { client in try await body(try #require(client.port)) }
    }
}

/// A port that accepts connections (the kernel's backlog) and never answers: a hanging receiver.
final class SilentListener: @unchecked Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(descriptor, raw, length) == 0 && listen(descriptor, 16) == 0 && getsockname(descriptor, raw, &length) == 0
            }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        try #require(bound)
    }

    deinit { close(descriptor) }
}

/// Log lines at warning and above, kept for the test to read.
final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    var text: String { lock.withLock { lines.joined(separator: "\n") } }

    func append(_ line: String) { lock.withLock { lines.append(line) } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
            let fields = (metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.append("\(message) \(fields)")
        }
    }

    /// Waits up to `seconds` for a line containing `text`.
    // 30 s: in the full parallel run on two cores a hook's task may wait long for a thread.
    func waitFor(_ text: String, seconds: Double = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if self.text.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return self.text.contains(text)
    }
}

@Suite("Validator: push wake-up hooks")
struct PushWakeHooksTests {
    static let wake = PushWake(id: "p_0123456789abcdef", user: "alice", host: "web1", service: "sshd", remoteAddress: "192.0.2.7", expires: 1_900_000_000)

    static func eventually(seconds: Double = 30, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return await condition()
    }

    @Test("A stored push request POSTs exactly one ntfy-style wake-up to push_hook_url, with neither the number nor the nonce")
    func postsOneWakeUp() async throws {
        let receiver = WakeReceiver()
        try await receiver.serve { port in
            let fixture = try await ValidatorFixture.make(.sqlite) { configuration in
                configuration.pushHookURL = PushHookURL("http://127.0.0.1:\(port)/securotp-{user}?x=1")
            }
            try await fixture.withClient { client in
                _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
                let opened = try await PushAPITests.open(client, fixture, "alice")
                #expect(opened.status == 201, "\(opened.text)")
                #expect(await Self.eventually { await receiver.received.count >= 1 })
                try await Task.sleep(for: .milliseconds(500))
                let received = await receiver.received
                #expect(received.count == 1)
                let wake = try #require(received.first)
                #expect(wake.path == "/securotp-alice")
                #expect(wake.body == "Login to web1 as alice (service sshd): open securotp-authenticator")
                #expect(wake.headers["title"] == "securotp login: alice")
                #expect(wake.headers["priority"] == "high" && wake.headers["tags"] == "key")
                let everything = wake.body + wake.path + wake.headers.values.joined()
                #expect(!everything.contains("492817") && !everything.contains(PushAPITests.nonce))
            }
        }
    }

    @Test("{user} is percent-encoded; plain http goes to loopback only")
    func urlTemplate() throws {
        #expect(PushHookURL("https://ntfy.example/securotp-{user}") != nil)
        #expect(PushHookURL("http://127.0.0.1:8080/{user}") != nil)
        #expect(PushHookURL("http://ntfy.example/{user}") == nil)
        #expect(PushHookURL("ftp://ntfy.example/x") == nil)
        #expect(PushHookURL("https://user:pw@ntfy.example/x") == nil)
        #expect(PushHookURL("https://ntfy.example/a b") == nil)
        var configuration = DaemonConfiguration()
        #expect(throws: ServiceError.self) { try configuration.apply(key: "push_hook_url", value: "http://192.0.2.1/x", origin: "test") }
        #expect(throws: ServiceError.self) { try configuration.apply(key: "push_hook_command", value: "notify.sh", origin: "test") }
        try configuration.apply(key: "push_hook_command", value: "/nonexistent/hook", origin: "test")
        #expect(throws: ServiceError.self) { try configuration.validate() }
        try configuration.apply(key: "push_hook_url", value: "https://ntfy.example/securotp-{user}", origin: "test")
        #expect(configuration.pushHookURL?.template == "https://ntfy.example/securotp-{user}")
    }

    /// A directory for hook programs whose every directory from `/` down is root's (or this
    /// user's) and writable by nobody else, as push_hook_command requires: under the package's
    /// .build, not /tmp (world-writable, sticky or not).
    /// A directory for hook programs whose every ancestor passes the hook's own check: as root,
    /// under /run; else in the checkout's .build. Never under /tmp (mode 1777, refused like any
    /// directory others may write) — where a clone under /tmp would put the checkout's .build.
    static func programDirectory() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let base = geteuid() == 0 ? "/run/securotp-hook-tests" : root + "/.build/hook-tests"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: base)
        let directory = base + "/" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        return directory
    }

    /// Writes an executable through a child (install(1)), never through a descriptor of this
    /// process: in a full parallel run other tests fork at any moment, and a child that
    /// inherited a descriptor open for writing on the script makes its exec fail (ETXTBSY).
    static func install(_ text: String, at path: String) throws {
        try text.write(toFile: path + ".source", atomically: true, encoding: .utf8)
        let install = Process()
        install.executableURL = URL(fileURLWithPath: "/usr/bin/install")
        install.arguments = ["-m", "0755", path + ".source", path]
        try install.run()
        install.waitUntilExit()
        try #require(install.terminationStatus == 0)
    }

    @Test("push_hook_command must be a regular executable file nobody else may change, nor any directory above it")
    func commandFileChecked() throws {
        let directory = try Self.programDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/wake"
        try "#!/bin/sh\nexit 0\n".write(toFile: script, atomically: false, encoding: .utf8)
        func validate(_ path: String) throws {
            var configuration = DaemonConfiguration()
            try configuration.apply(key: "push_hook_command", value: path, origin: "test")
            try configuration.validate()
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        try validate(script)
        for (mode, why) in [(0o775, "writable by other users"), (0o757, "writable by other users"), (0o644, "is not executable")] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: script)
            #expect { try validate(script) } throws: { error in "\(error)".contains(why) }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: script)
        #expect { try validate(directory + "/link") } throws: { error in "\(error)".contains("symbolic link") }
        // The directories above it: writable by others (sticky or not), or someone else's.
        for mode in [0o775, 0o777, 0o1777] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: directory)
            #expect { try validate(script) } throws: { error in "\(error)".contains("\(directory) (above \(script)) is writable by other users") }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        try validate(script)
        #expect(chown(directory, 4242, 4242) == 0)
        #expect { try validate(script) } throws: { error in "\(error)".contains("is owned by uid 4242") }
        #expect(chown(directory, geteuid(), getegid()) == 0)
        // A path through a symbolic link to a writable directory: the directory it leads to counts.
        let open = try Self.programDirectory()
        defer { try? FileManager.default.removeItem(atPath: open) }
        try Self.install("#!/bin/sh\nexit 0\n", at: open + "/wake")
        try FileManager.default.createSymbolicLink(atPath: directory + "/via", withDestinationPath: open)
        try validate(directory + "/via/wake")
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: open)
        #expect { try validate(directory + "/via/wake") } throws: { error in "\(error)".contains("\(open) (above \(directory)/via/wake) is writable by other users") }
        #expect { try validate("/usr//bin/true") } throws: { error in "\(error)".contains("plain absolute path") }
        try validate("/bin/true")
    }

    @Test("push_hook_command is checked before every run: a directory above it that others may write since start-up stops it")
    func commandCheckedEachRun() async throws {
        let directory = try Self.programDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/wake"
        try Self.install("#!/bin/sh\necho ran >> \(directory)/ran\n", at: script)
        var configuration = DaemonConfiguration()
        try configuration.apply(key: "push_hook_command", value: script, origin: "test")
        try configuration.validate()
        // After start-up another user is given the directory: whatever they put there must not run.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory)
        let log = CapturedLog()
        let hooks = PushWakeHooks(url: nil, command: script, timeout: .seconds(120), logger: log.logger)
        hooks.fire(Self.wake)
        #expect(await log.waitFor("push_hook_command not run"), "\(log.text)")
        #expect(log.text.contains("is writable by other users"), "\(log.text)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/ran"), "the hook ran from a directory others may write")
        // Safe again: the next wake-up runs it.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        hooks.fire(Self.wake)
        #expect(await Self.eventually(seconds: 600) { FileManager.default.fileExists(atPath: directory + "/ran") }, "hook log: \(log.text)")
    }

    @Test("push_hook_url over https to an IP address: the certificate must name that address (IP SAN); one naming only a DNS name is refused")
    func httpsToAnIPAddress() async throws {
        let directory = try ValidatorFixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificates = try TestCertificates.make(in: directory)
        for (certificate, key, namesTheAddress) in [(certificates.serverCertificate, certificates.serverKey, true),
                                                    (certificates.dnsOnlyCertificate, certificates.dnsOnlyKey, false)] {
            let fixture = try await ValidatorFixture.make(.sqlite) {
                $0.tlsCertificate = certificate
                $0.tlsKey = key
            }
            try await TLSTests.withServer(fixture) { url in
                let port = try #require(URLComponents(string: url)?.port)
                let log = CapturedLog()
                let hooks = PushWakeHooks(url: PushHookURL("https://127.0.0.1:\(port)/{user}"), command: nil, timeout: .seconds(30),
                                          caFile: certificates.ca, logger: log.logger)
                hooks.fire(Self.wake)
                #expect(await log.waitFor("push wake-up failed"), "\(log.text)")
                // Any HTTP answer means the TLS session was taken: only with the IP SAN.
                #expect(log.text.contains("push_hook_url answered HTTP") == namesTheAddress, "\(certificate): \(log.text)")
            }
        }
    }

    @Test("A user's name in the URL is percent-encoded")
    func userEncoded() async throws {
        let receiver = WakeReceiver()
        try await receiver.serve { port in
            let log = CapturedLog()
            let hooks = PushWakeHooks(url: PushHookURL("http://127.0.0.1:\(port)/t/{user}"), command: nil, logger: log.logger)
            var wake = Self.wake
            wake.user = "a b/c?d"
            hooks.fire(wake)
            #expect(await Self.eventually { await receiver.received.count == 1 })
            #expect(await receiver.received.first?.path == "/t/a%20b%2Fc%3Fd")
        }
    }

    @Test("push_hook_command runs directly with the request in its environment and no standard input")
    func commandHook() async throws {
        let directory = try Self.programDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/hook"
        try Self.install("#!/bin/sh\n/usr/bin/env > \(directory)/env.tmp\ncat > \(directory)/stdin\nmv \(directory)/env.tmp \(directory)/env\n", at: script)
        let log = CapturedLog()
        let hooks = PushWakeHooks(url: nil, command: script, timeout: .seconds(120), logger: log.logger)
        var wake = Self.wake
        wake.service = "ssh\u{1b}[2Jd"
        hooks.fire(wake)
        // Alone it writes the file within a second. The bound is long because the in-process
        // run still has tests that wait on child processes on their own thread (stoken, oathtool,
        // python), holding Swift's cooperative pool; the hook's task waited over 60 s behind
        // them once. A refused or failed run is in the log at once: no waiting out the bound then.
        #expect(await Self.eventually(seconds: 600) {
            FileManager.default.fileExists(atPath: directory + "/env") || log.text.contains("push wake-up failed")
        }, "hook log: \(log.text)")
        #expect(!log.text.contains("push wake-up failed"), "hook log: \(log.text)")
        let environment = try String(contentsOfFile: directory + "/env", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(environment.contains("SECUROTP_PUSH_ID=p_0123456789abcdef"))
        #expect(environment.contains("SECUROTP_PUSH_USER=alice"))
        #expect(environment.contains("SECUROTP_PUSH_HOST=web1"))
        #expect(environment.contains(#"SECUROTP_PUSH_SERVICE=ssh\x1b[2Jd"#), "escaped, never raw control bytes")
        #expect(environment.contains("SECUROTP_PUSH_REMOTE_ADDRESS=192.0.2.7"))
        #expect(environment.contains("SECUROTP_PUSH_EXPIRES=1900000000"))
        #expect(!environment.contains { $0.hasPrefix("SECUROTP_PUSH_NUMBER") || $0.hasPrefix("SECUROTP_PUSH_NONCE") })
        #expect(try String(contentsOfFile: directory + "/stdin", encoding: .utf8).isEmpty)
        try await Task.sleep(for: .milliseconds(200))
        #expect(!log.text.contains("failed"), "\(log.text)")
    }

    @Test("A hanging receiver delays no POST /v1/push; its timeout is logged")
    func hangingReceiver() async throws {
        let silent = try SilentListener()
        let fixture = try await ValidatorFixture.make(.sqlite) { configuration in
            configuration.pushHookURL = PushHookURL("http://127.0.0.1:\(silent.port)/{user}")
        }
        try await fixture.withClient { client in
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let started = Date()
            for _ in 0..<3 { #expect(try await PushAPITests.open(client, fixture, "alice").status == 201) }
            // Waiting for the hook would take 3 × its 5 s bound; the margin is for loaded CI cores.
            #expect(Date().timeIntervalSince(started) < 10, "three opens took \(Date().timeIntervalSince(started)) s; the hook's bound is 5 s each")
        }
        let log = CapturedLog()
        let hooks = PushWakeHooks(url: PushHookURL("http://127.0.0.1:\(silent.port)/{user}"), command: nil, timeout: .milliseconds(300), logger: log.logger)
        hooks.fire(Self.wake)
        #expect(await log.waitFor("no answer within"), "\(log.text)")
    }

    @Test("Failing receivers and commands are logged; past the cap wake-ups are dropped and logged")
    func failuresLogged() async throws {
        let receiver = WakeReceiver()
        try await receiver.serve { port in
            let log = CapturedLog()
            PushWakeHooks(url: PushHookURL("http://127.0.0.1:\(port)/fail"), command: nil, logger: log.logger).fire(Self.wake)
            #expect(await log.waitFor("push_hook_url answered HTTP 500"), "\(log.text)")
            #expect(log.text.contains("push=p_0123456789abcdef"))
        }
        let log = CapturedLog()
        PushWakeHooks(url: nil, command: "/bin/false", logger: log.logger).fire(Self.wake)
        #expect(await log.waitFor("push_hook_command exited with status 1"), "\(log.text)")

        let directory = try Self.programDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/hang"
        try Self.install("#!/bin/sh\nexec /bin/sleep 30\n", at: script)
        let capped = PushWakeHooks(url: nil, command: script, timeout: .milliseconds(500), maxConcurrent: 1, logger: log.logger)
        capped.fire(Self.wake)
        capped.fire(Self.wake)
        #expect(await log.waitFor("too many hook calls in flight"), "\(log.text)")
        #expect(await log.waitFor("push_hook_command killed after"), "\(log.text)")
    }
}
