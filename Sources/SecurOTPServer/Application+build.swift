import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import SecurOTPCore
import SecurOTPService
import ServiceLifecycle

/// The validator's HTTP application: routes, middleware and listener, from a configuration and
/// a token service. securotpd runs it; the tests build the same application (port 0, an
/// in-process service) so what they test is what runs.
/// `waiters`: the long-polls' tickets (tests pass theirs to see when a wait is parked).
public func buildApplication(configuration: DaemonConfiguration, service: any TokenService, logger: Logger, metrics: ValidatorMetrics = ValidatorMetrics(),
                             waiters: PushWaiters? = nil,
                             onServerRunning: @escaping @Sendable (_ boundAddress: String) async -> Void = { _ in })
    throws -> some ApplicationProtocol {
    let polls = LongPolls()
    let misses = AnonymousMisses()
    let router = buildRouter(configuration: configuration, service: service, metrics: metrics, waiters: waiters, polls: polls, misses: misses,
                             logger: logger)
    var services: [any Service] = [AuditPruner(service: service, retentionDays: configuration.auditRetentionDays, logger: logger),
                                   AnonymousMissesFlusher(misses: misses, service: service)]
    if let upkeep = service as? any PushUpkeep { services.append(PushSweeper(upkeep: upkeep, clock: service.clock, logger: logger)) }
    if let listen = configuration.servedMetricsListen {
        services.append(Application(router: buildMetricsRouter(metrics), configuration: .init(address: bindAddress(listen), serverName: "securotpd"),
                                    onServerRunning: { channel in
                                        logger.notice("metrics listening", metadata: ["metrics_listen": "\(boundAddress(channel) ?? "\(listen)")"])
                                    }, logger: logger))
    }
    return Application(responder: router.buildResponder(), server: try serverBuilder(configuration, polls: polls),
                       configuration: .init(address: bindAddress(configuration.listen), serverName: "securotpd"), services: services,
                       onServerRunning: { channel in await onServerRunning(boundAddress(channel) ?? "\(configuration.listen)") }, logger: logger)
}

func bindAddress(_ listen: DaemonConfiguration.Listen) -> BindAddress {
    switch listen {
    case .tcp(let host, let port): .hostname(host, port: port)
    case .unix(let path): .unixDomainSocket(path: path)
    }
}

/// `/metrics` alone, for the metrics listener (`metrics_listen`): Prometheus text, no
/// credential, so never on the API's listener, where every host could read it.
public func buildMetricsRouter(_ metrics: ValidatorMetrics) -> Router<BasicRequestContext> {
    let router = Router()
    router.get(APIPath.metrics.route(in: "")) { _, _ in
        var buffer = ByteBuffer()
        buffer.writeBytes(metrics.exposition())
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: buffer))
    }
    return router
}

/// "127.0.0.1:43117", "[::1]:8443" or "unix:/run/securotp.sock".
func boundAddress(_ channel: any Channel) -> String? {
    guard let address = channel.localAddress else { return nil }
    if let path = address.pathname { return "unix:\(path)" }
    guard let ip = address.ipAddress, let port = address.port else { return nil }
    return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
}

/// Routes and middleware alone (the OpenAPI test compares these with docs/api/openapi.yaml).
public func buildRouter(configuration: DaemonConfiguration, service: any TokenService) -> Router<ValidatorRequestContext> {
    buildRouter(configuration: configuration, service: service, metrics: ValidatorMetrics())
}

func buildRouter(configuration: DaemonConfiguration, service: any TokenService, metrics: ValidatorMetrics,
                 waiters: PushWaiters? = nil, polls: LongPolls = LongPolls(), misses: AnonymousMisses = AnonymousMisses(),
                 logger: Logger = Logger(label: "securotpd"),
                 clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) -> Router<ValidatorRequestContext> {
    let waiters = waiters ?? PushWaiters(capacity: configuration.maxPushWaiters)
    // Nodes sharing a database end each other's waits (PushChangeFeed).
    (service as? any PushChangeFeed)?.followPushChanges { key in await waiters.notify(key) }
    let limits = RateLimits(hostPerSecond: configuration.hostRequestsPerSecond, userPerMinute: configuration.userVerificationsPerMinute,
                            addressPerMinute: configuration.webRequestsPerMinute, devicePerMinute: configuration.deviceRequestsPerMinute,
                            clock: clock)
    let router = Router(context: ValidatorRequestContext.self)
    router.add(middleware: AccessLog(metrics: metrics, polls: polls))
    router.add(middleware: ErrorEnvelopeMiddleware())
    SystemRoutes(service: service, healthTimeout: .seconds(configuration.healthTimeoutSeconds)).add(to: router)
    WebAppRoutes(usesTLS: configuration.usesTLS).add(to: router)
    let hooks = PushWakeHooks(url: configuration.pushHookURL, command: configuration.pushHookCommand, logger: logger)
    let push = PushRoutes(devices: service as? any DeviceService, waiters: waiters, polls: polls, hooks: hooks.isEnabled ? hooks : nil)
    HostRoutes(service: service, limits: limits, metrics: metrics, push: push)
        .add(to: router.group("v1").add(middleware: BodyLimit(bytes: BodyLimit.host)).add(middleware: Authenticate(service: service, kind: .host, limits: limits, metrics: metrics)))
    AdminRoutes(service: service, push: push)
        .add(to: router.group("v1").add(middleware: Authenticate(service: service, kind: .admin, limits: limits, metrics: metrics)))
    push.addActivation(to: router.group("v1").add(middleware: AddressRateLimit(limits: limits, metrics: metrics))
        .add(middleware: BodyLimit(bytes: BodyLimit.host)), misses: misses)
    WebRoutes(devices: service as? any WebDeviceService)
        .add(to: router.group("v1").add(middleware: AddressRateLimit(limits: limits, metrics: metrics)).add(middleware: BodyLimit(bytes: BodyLimit.host))
            .add(middleware: OriginCheck(publicURL: configuration.push.publicURL)))
    push.addDevice(to: router.group("v1").add(middleware: BodyLimit(bytes: BodyLimit.host))
        .add(middleware: OriginCheck(publicURL: configuration.push.publicURL))
        .add(middleware: DeviceAuthenticate(devices: service as? any DeviceService, limits: limits, metrics: metrics)))
    return router
}

/// HTTP/1.1, over TLS 1.2+ when a certificate is configured; mutual TLS with a client CA.
/// Each connection's pipeline holds a LongPollHandler, where push long-polls wait, and closes
/// after `idle_timeout` without a request in progress.
func serverBuilder(_ configuration: DaemonConfiguration, polls: LongPolls) throws -> HTTPServerBuilder {
    let http1 = HTTPServerBuilder.validatorHTTP1(configuration: .init(additionalChannelHandlers: [polls.handler()],
                                                                      idleTimeout: .seconds(Int64(configuration.idleTimeoutSeconds))))
    guard let certificate = configuration.tlsCertificate, let key = configuration.tlsKey else { return http1 }
    var tls = TLSConfiguration.makeServerConfiguration(
        certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
        privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
    tls.minimumTLSVersion = .tlsv12
    if let clientCA = configuration.tlsClientCA {
        tls.certificateVerification = .noHostnameVerification
        tls.trustRoots = .file(clientCA)
    }
    return try .tls(http1, tlsConfiguration: tls)
}

/// Deletes audit entries past the retention period, hourly.
struct AuditPruner: Service {
    let service: any TokenService
    let retentionDays: Int
    let logger: Logger

    func run() async throws {
        // A service that returns would end the whole service group: wait for shutdown instead.
        guard retentionDays > 0 else { return try await gracefulShutdown() }
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let cutoff = Int64(Date().timeIntervalSince1970) - Int64(retentionDays) * 86_400
                do throws(ServiceError) {
                    let removed = try await service.pruneAudit(before: cutoff)
                    if removed > 0 { logger.info("pruned audit log", metadata: ["removed": "\(removed)", "retention_days": "\(retentionDays)"]) }
                } catch {
                    logger.warning("audit pruning failed", metadata: ["error": "\(error.message)"])
                }
                try await Task.sleep(for: .seconds(3600))
            }
        }
    }
}
