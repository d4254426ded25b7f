import Hummingbird
import Logging

/// One structured log line and the request metrics per request: method, route template,
/// status, duration, caller and peer — never a body, so never a code, PIN or credential.
struct AccessLog: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    let metrics: ValidatorMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let duration = ContinuousClock.now - start
        let route = context.endpointPath ?? "unmatched"
        metrics.request(route: route, method: request.method.rawValue, status: response.status.code, duration: duration)
        let microseconds = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        context.logger.info("request", metadata: [
            "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(response.status.code)",
            "duration_us": "\(microseconds)", "peer": "\(context.peer)",
        ])
        return response
    }
}
