import Prometheus

/// What Prometheus scrapes at /metrics: requests by route and status, latency histograms,
/// and verification results (accepts, rejects, locks, replays, challenges).
public final class ValidatorMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let authenticationFailures: Counter
    let rateLimited: Counter

    static let buckets: [Duration] = [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                                      .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                                      .milliseconds(500), .seconds(1), .seconds(5)]

    static func name(_ metric: String, unit: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "securotpd", metricName: metric, unitName: unit, helpText: help)
    }

    static var requests: MetricNameDescriptor { name("requests", unit: "total", help: "HTTP requests by route, method and status") }
    static var duration: MetricNameDescriptor { name("request_duration", unit: "seconds", help: "Time from request to response, by route") }
    static var verifications: MetricNameDescriptor { name("verifications", unit: "total", help: "Verification outcomes: accept, reject, locked, challenge, replay") }

    /// A fresh registry; securotpd makes one per process (tests one per application).
    public convenience init() { self.init(registry: PrometheusCollectorRegistry()) }

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        authenticationFailures = registry.makeCounter(descriptor: Self.name("authentication_failures", unit: "total",
                                                                            help: "Requests refused for a missing, unknown or revoked credential"))
        rateLimited = registry.makeCounter(descriptor: Self.name("rate_limited", unit: "total", help: "Requests refused by a host or user rate limit"))
    }

    func request(route: String, method: String, status: Int, duration: Duration) {
        registry.makeCounter(descriptor: Self.requests, labels: [("route", route), ("method", method), ("status", String(status))]).increment()
        registry.makeDurationHistogram(descriptor: Self.duration, labels: [("route", route)], buckets: Self.buckets).record(duration)
    }

    /// accept, reject, locked, challenge; replays are rejects counted again under "replay".
    func verification(_ result: String) {
        registry.makeCounter(descriptor: Self.verifications, labels: [("result", result)]).increment()
    }

    func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
