import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SecurOTPCore
import SecurOTPStore

/// What a wake-up hook is told of a push request (docs/push.md, "Wake-up hooks"): who, where
/// and until when — never the number or the nonce, which only the host and the device share.
public struct PushWake: Sendable, Equatable {
    public var id: String
    public var user: String
    public var host: String
    public var service: String
    public var remoteAddress: String
    public var expires: Int64

    public init(id: String, user: String, host: String, service: String, remoteAddress: String, expires: Int64) {
        self.id = id
        self.user = user
        self.host = host
        self.service = service
        self.remoteAddress = remoteAddress
        self.expires = expires
    }

    /// The notification's text: "Login to web1 as alice (service sshd): open securotp-authenticator".
    /// Escaped and bounded: the host's fields are outside bytes.
    public var message: String {
        let service = self.service.isEmpty ? "" : " (service \(Self.shown(self.service, 64)))"
        return "Login to \(Self.shown(host, 128)) as \(Self.shown(user, 128))\(service): open securotp-authenticator"
    }

    /// The environment of `push_hook_command`, each value escaped and bounded.
    public var environment: [String: String] {
        ["SECUROTP_PUSH_ID": Self.shown(id, 64), "SECUROTP_PUSH_USER": Self.shown(user, 256), "SECUROTP_PUSH_HOST": Self.shown(host, 256),
         "SECUROTP_PUSH_SERVICE": Self.shown(service, 256), "SECUROTP_PUSH_REMOTE_ADDRESS": Self.shown(remoteAddress, 512),
         "SECUROTP_PUSH_EXPIRES": String(expires)]
    }

    static func shown(_ text: String, _ maxBytes: Int) -> String { TerminalText.bounded(TerminalText.escaped(text), maxBytes: maxBytes) }
}

/// `push_hook_url`: where wake-ups are POSTed, ntfy style; `{user}` stands for the user's name,
/// percent-encoded, so that each user can have a topic of their own.
public struct PushHookURL: Sendable, Equatable, CustomStringConvertible {
    public let template: String

    /// Plain http only to loopback, like the validator's own listener: the text says who logs in where.
    public init?(_ template: String) {
        guard template.utf8.count <= 2048, template.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }),
              let url = Self.parse(template.replacingOccurrences(of: "{user}", with: "user")) else { return nil }
        if url.scheme == "http", !LoopbackHost.contains(url.host) { return nil }
        self.template = template
    }

    public var description: String { template }

    /// The URL for `user`.
    func url(user: String) -> (scheme: String, host: String, port: Int, target: String)? {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        guard let encoded = user.addingPercentEncoding(withAllowedCharacters: unreserved) else { return nil }
        return Self.parse(template.replacingOccurrences(of: "{user}", with: encoded))
    }

    static func parse(_ text: String) -> (scheme: String, host: String, port: Int, target: String)? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty, components.user == nil, components.password == nil, components.fragment == nil else { return nil }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else { return nil }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        let target = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        return (scheme, host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port, target)
    }

}

/// Wakes a phone or desktop when a push request is stored (docs/push.md, "Wake-up hooks"): an
/// HTTP POST in ntfy style (`push_hook_url`) and/or a command run directly (`push_hook_command`).
/// Fire and forget: the POST /v1/push answer never waits for a hook nor fails with one. Bounded:
/// each call ends after `timeout`; past `maxConcurrent` calls in flight, a wake-up is dropped and
/// logged; failures are logged with escaped, bounded text.
public final class PushWakeHooks: Sendable {
    public let url: PushHookURL?
    public let command: String?
    public let timeout: TimeAmount
    public let maxConcurrent: Int
    /// Whom `push_hook_url`'s https certificates must chain to: this PEM file's CAs, or the
    /// system's (nil).
    let trustRoots: NIOSSLTrustRoots
    let logger: Logger
    private let inFlight = NIOLockedValueBox(0)

    public static let defaultTimeout = TimeAmount.seconds(5)
    public static let defaultMaxConcurrent = 32

    public init(url: PushHookURL?, command: String?, timeout: TimeAmount = defaultTimeout, maxConcurrent: Int = defaultMaxConcurrent,
                caFile: String? = nil, logger: Logger) {
        self.url = url
        self.command = command
        self.timeout = timeout
        self.maxConcurrent = maxConcurrent
        trustRoots = caFile.map { NIOSSLTrustRoots.file($0) } ?? .default
        self.logger = logger
    }

    public var isEnabled: Bool { url != nil || command != nil }

    /// Starts the configured hooks for `wake` and returns at once.
    public func fire(_ wake: PushWake) {
        if let url { start("push_hook_url", wake) { try await self.post(url, wake) } }
        if let command { start("push_hook_command", wake) { try await self.run(command, wake) } }
    }

    private func start(_ hook: String, _ wake: PushWake, _ call: @escaping @Sendable () async throws -> Void) {
        let admitted = inFlight.withLockedValue { count -> Bool in
            guard count < maxConcurrent else { return false }
            count += 1
            return true
        }
        guard admitted else {
            logger.warning("push wake-up dropped: too many hook calls in flight",
                           metadata: ["hook": "\(hook)", "limit": "\(maxConcurrent)", "push": "\(TerminalText.bounded(wake.id, maxBytes: 64))"])
            return
        }
        Task {
            defer { inFlight.withLockedValue { $0 -= 1 } }
            do {
                try await call()
            } catch {
                // Bounded here, escaped once by the log handler (LogfmtHandler.quote).
                logger.warning("push wake-up failed", metadata: ["hook": "\(hook)", "push": "\(TerminalText.bounded(wake.id, maxBytes: 64))",
                                                                 "error": "\(TerminalText.bounded("\(error)", maxBytes: 300))"])
            }
        }
    }

    // MARK: push_hook_url

    struct HookError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    func post(_ template: PushHookURL, _ wake: PushWake) async throws {
        guard let url = template.url(user: wake.user) else { throw HookError("push_hook_url has no URL for this user") }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: url.port == (url.scheme == "https" ? 443 : 80) ? url.host : "\(url.host):\(url.port)")
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Title", value: Self.headerValue("securotp login: \(wake.user)"))
        headers.add(name: "Priority", value: "high")
        headers.add(name: "Tags", value: "key")
        headers.add(name: "Connection", value: "close")
        let body = Array(wake.message.utf8)
        headers.add(name: "Content-Length", value: String(body.count))
        let status = try await Self.send(host: url.host, port: url.port, tls: url.scheme == "https", head: HTTPRequestHead(
            version: .http1_1, method: .POST, uri: url.target, headers: headers), body: body, timeout: timeout, trustRoots: trustRoots)
        guard (200..<300).contains(status) else { throw HookError("push_hook_url answered HTTP \(status)") }
    }

    /// Printable ASCII only: a header value can carry neither a line break nor bytes a receiver may misread.
    static func headerValue(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(200).map { $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }))
    }

    /// One request, one response status; the connection is closed after it or at `timeout`.
    /// Over https the certificate must chain to `trustRoots` and name the URL's host: its DNS
    /// name (sent as SNI), or for an IP address an IP SAN equal to the address connected to
    /// (NIOSSL checks it against the socket's peer when no server name is given, RFC 6066 forbids
    /// an IP address in SNI; tested by PushWakeHooksTests.httpsToAnIPAddress).
    static func send(host: String, port: Int, tls: Bool, head: HTTPRequestHead, body: [UInt8], timeout: TimeAmount,
                     trustRoots: NIOSSLTrustRoots = .default) async throws -> Int {
        let group = MultiThreadedEventLoopGroup.singleton
        let eventLoop = group.next()
        let status = eventLoop.makePromise(of: Int.self)
        let timer = eventLoop.scheduleTask(in: timeout) { status.fail(HookError("no answer within \(timeout.nanoseconds / 1_000_000) ms")) }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = trustRoots
        configuration.certificateVerification = .fullVerification
        let sslContext = tls ? try NIOSSLContext(configuration: configuration) : nil
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        let serverName = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(StatusHandler(status))
                }
            }
        let connecting = bootstrap.connect(host: host, port: port)
        connecting.whenFailure { status.fail($0) }
        connecting.whenSuccess { channel in
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { status.fail($0) }
            status.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
        defer { timer.cancel() }
        return try await status.futureResult.get()
    }

    /// Takes the response's status and ignores its body; a connection closed before it fails.
    final class StatusHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let status: EventLoopPromise<Int>

        init(_ status: EventLoopPromise<Int>) { self.status = status }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head(let head) = unwrapInboundIn(data) { status.succeed(Int(head.status.code)) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            status.fail(HookError("the connection closed before an answer"))
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            status.fail(error)
            context.close(promise: nil)
        }
    }

    // MARK: push_hook_command

    /// Runs the command directly (no shell) with the request in its environment, no standard
    /// input and no output kept; killed at `timeout`.
    func run(_ command: String, _ wake: PushWake) async throws {
        // Checked before every run, the directories above it too: a file or directory someone
        // else could change since start-up is not run (docs/push.md, "Wake-up hooks").
        do throws(StoreError) { try FileSecurity.checkProgram(command) } catch {
            throw HookError("push_hook_command not run: \(error.message)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command)
        process.arguments = []
        process.environment = wake.environment.merging(["PATH": "/usr/local/bin:/usr/bin:/bin"]) { own, _ in own }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        // The exit may come before the wait starts: whichever comes second resumes.
        let exit = NIOLockedValueBox<(exited: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))
        process.terminationHandler = { _ in
            exit.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                state.exited = true
                return state.waiting.take()
            }?.resume()
        }
        try process.run()
        let pid = process.processIdentifier
        let killed = NIOLockedValueBox(false)
        let nanoseconds = UInt64(max(timeout.nanoseconds, 0))
        let killer = Task {
            try await Task.sleep(nanoseconds: nanoseconds)
            killed.withLockedValue { $0 = true }
            kill(pid, SIGKILL)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = exit.withLockedValue { state -> Bool in
                if !state.exited { state.waiting = continuation }
                return state.exited
            }
            if exited { continuation.resume() }
        }
        killer.cancel()
        if killed.withLockedValue({ $0 }) { throw HookError("push_hook_command killed after \(nanoseconds / 1_000_000) ms") }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw HookError("push_hook_command " + (process.terminationReason == .exit ? "exited with status \(process.terminationStatus)"
                                                                                   : "ended by signal \(process.terminationStatus)"))
        }
    }
}
