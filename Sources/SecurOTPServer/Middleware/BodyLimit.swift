import Hummingbird
import SecurOTPCore

/// Caps the request bodies a route group reads. A host request is a user name, a passcode
/// and a challenge or offline-code report: a few hundred bytes. Without a cap a host could
/// send megabyte user names at its request rate (Hummingbird reads up to 2 MiB).
struct BodyLimit: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    /// Host requests: the limit the module checks its preflight against too (HostRequestLimit).
    static let host = HostRequestLimit.bytes

    let bytes: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.maxUploadSize = bytes
        return try await next(request, context)
    }
}
