import Hummingbird
import SecurOTPCore
import SecurOTPService

/// Health, for load balancers and monitors: no credential needed, and then only the status.
/// The version (which tells an attacker which advisories apply) and the store kind only go to
/// an admin credential. A store that does not answer is 503 for everyone (StoreHealth).
/// Metrics have a listener of their own (buildMetricsRouter).
struct SystemRoutes {
    let service: any TokenService
    let health: StoreHealth

    init(service: any TokenService, healthTimeout: Duration) {
        self.service = service
        health = StoreHealth(service: service, deadline: healthTimeout)
    }

    func add(to router: Router<ValidatorRequestContext>) {
        router.get(APIPath.health.route(in: "")) { request, context in
            guard await health.healthy() else {
                throw ServiceError(.unavailable, "the store does not answer")
            }
            guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
                  let caller = try? await service.authenticate(credential: String(header.dropFirst(7)), address: context.peer),
                  caller.kind == .admin else {
                return JSONResponse(HealthResponse(status: "ok"))
            }
            return JSONResponse(HealthResponse(status: "ok", version: SecurOTPVersion.string, store: service.storeKind))
        }
    }
}
