import Hummingbird
import SecurOTPService

/// Device and web routes (docs/push.md "Phones without an app"): a request that carries an
/// `Origin` header must come from the validator's own page (public_url's origin). No route
/// reads a cookie, so this is defence in depth against another site's page calling the API
/// with a bearer token it could not have; the authenticator sends no Origin at all.
struct OriginCheck: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    let publicURL: PublicURL?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let origin = request.headers[.origin], origin != publicURL?.origin {
            throw ServiceError(.forbidden, "requests from another origin are refused; the page must be served by this validator's public_url")
        }
        return try await next(request, context)
    }
}
