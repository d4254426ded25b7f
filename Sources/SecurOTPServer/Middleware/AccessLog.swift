import Hummingbird
import Logging

/// One structured log line and the request metrics per request: method, route template,
/// status, duration, caller and peer — never a body, so never a code, PIN or credential.
struct AccessLog: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    let metrics: ValidatorMetrics
    var polls: LongPolls? = nil

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let route = context.endpointPath ?? "unmatched"
        let method = request.method.rawValue, peer = context.peer, logger = context.logger, metrics = metrics
        let record: @Sendable (HTTPResponse.Status) -> Void = { status in
            let duration = ContinuousClock.now - start
            metrics.request(route: route, method: method, status: status.code, duration: duration)
            let microseconds = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
            logger.info("request", metadata: [
                "method": "\(method)", "route": "\(route)", "status": "\(status.code)", "duration_us": "\(microseconds)", "peer": "\(peer)",
            ])
        }
        // A parked long-poll (LongPolls) is logged with its answer, when the connection writes it.
        if response.headers[LongPolls.marker] != nil, let polls, let channel = context.channel {
            polls.whenAnswered(on: channel, record)
        } else {
            record(response.status)
        }
        return response
    }
}
