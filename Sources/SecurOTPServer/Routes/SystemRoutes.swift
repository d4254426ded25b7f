import Hummingbird
import SecurOTPCore
import SecurOTPService

/// Health (load balancers, monitors) and metrics (Prometheus): no credential needed, no user
/// data in either.
struct SystemRoutes {
    let service: any TokenService
    let metrics: ValidatorMetrics
    let metricsEnabled: Bool

    func add(to router: Router<ValidatorRequestContext>) {
        router.get("v1/health") { _, _ in
            JSONResponse(HealthResponse(status: "ok", version: SecurOTPVersion.string, store: service.storeKind))
        }
        if metricsEnabled {
            router.get("metrics") { _, _ in
                var buffer = ByteBuffer()
                buffer.writeBytes(metrics.exposition())
                return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: buffer))
            }
        }
    }
}
