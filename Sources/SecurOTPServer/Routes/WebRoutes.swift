import Hummingbird
import SecurOTPCore
import SecurOTPService

/// Phones without an app (docs/push.md "Phones without an app"): the passkey page's enrollment
/// routes. No credential: the single-use activation code is one.
struct WebRoutes {
    let devices: (any WebDeviceService)?

    private func service() throws(ServiceError) -> any WebDeviceService {
        guard let devices else { throw ServiceError(.notSupported, "web devices are not available with this store (docs/push.md)") }
        return devices
    }

    func add(to group: RouterGroup<ValidatorRequestContext>) {
        group.post(APIPath.webEnrollOptions.route()) { request, context in
            let body = try await request.decode(as: WebEnrollOptionsRequest.self, context: context)
            return JSONResponse(try await service().webEnrollOptions(body, address: context.peer))
        }
        group.post(APIPath.webEnroll.route()) { request, context in
            let body = try await request.decode(as: WebEnrollRequest.self, context: context)
            return JSONResponse(try await service().webEnroll(body, address: context.peer))
        }
        group.post(APIPath.webSessionOptions.route()) { _, context in
            JSONResponse(try await service().webSessionOptions(address: context.peer))
        }
        group.post(APIPath.webSession.route()) { request, context in
            let body = try await request.decode(as: WebSessionRequest.self, context: context)
            return JSONResponse(try await service().webSession(body, address: context.peer))
        }
    }
}
