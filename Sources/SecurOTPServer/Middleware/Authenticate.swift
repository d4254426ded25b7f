import Hummingbird
import SecurOTPService

/// Resolves `Authorization: Bearer <credential>` to a caller of the kind a route group
/// serves (hosts verify, admins manage); everything else is refused before the route runs.
/// A host is also held to its request rate here.
struct Authenticate: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    let service: any TokenService
    let kind: Caller.Kind
    let limits: RateLimits
    let metrics: ValidatorMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            metrics.authenticationFailures.increment()
            throw ServiceError(.unauthorized, "send the \(kind.rawValue) credential as Authorization: Bearer <credential>")
        }
        let caller: Caller
        do {
            caller = try await service.authenticate(credential: String(header.dropFirst(7)), address: context.peer)
        } catch {
            metrics.authenticationFailures.increment()
            context.logger.notice("refused credential", metadata: ["peer": "\(context.peer)", "path": "\(request.uri.path)"])
            throw error
        }
        guard caller.kind == kind else {
            throw ServiceError(.forbidden, "\(caller.kind.rawValue) credentials cannot call \(request.uri.path); it is for \(kind.rawValue)s")
        }
        if caller.kind == .host, !limits.allowHost(caller.name) {
            metrics.rateLimited.increment()
            throw ServiceError(.rateLimited, "host \(caller.name) is over its request rate; slow down")
        }
        var context = context
        context.caller = caller
        return try await next(request, context)
    }
}
