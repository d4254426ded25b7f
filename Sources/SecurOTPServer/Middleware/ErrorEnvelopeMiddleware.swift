import Hummingbird
import Logging
import SecurOTPService

/// Every error leaves the server in one JSON envelope, `{"error": {"code", "message"}}`:
/// service errors with their own code, Hummingbird's (bad JSON, unknown path, body too large)
/// with a code derived from the status, anything else as "internal" without details.
struct ErrorEnvelopeMiddleware: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ServiceError {
            var response = Self.envelope(status: .init(code: error.httpStatus), code: error.code.rawValue, message: error.message)
            if error.code == .rateLimited { response.headers[.retryAfter] = "1" }
            if error.code == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer realm=\"securotpd\"" }
            return response
        } catch let error as HTTPError {
            return Self.envelope(status: error.status, code: Self.code(for: error.status), message: error.body ?? error.status.reasonPhrase)
        } catch let error as any HTTPResponseError {
            return Self.envelope(status: error.status, code: Self.code(for: error.status), message: error.status.reasonPhrase)
        } catch {
            context.logger.error("internal error", metadata: ["error": "\(String(reflecting: error))"])
            return Self.envelope(status: .internalServerError, code: "internal", message: "internal error; see the validator's log")
        }
    }

    static func envelope(status: HTTPResponse.Status, code: String, message: String) -> Response {
        var buffer = ByteBuffer()
        let body = (try? APICoding.encoder().encode(ErrorEnvelope(code: code, message: message))).map { Array($0) } ?? Array("{}".utf8)
        buffer.writeBytes(body)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
    }

    static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: "invalid_input"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "not_found"
        case 405: "method_not_allowed"
        case 413: "too_large"
        case 429: "rate_limited"
        case 503: "unavailable"
        default: status.code >= 500 ? "internal" : "invalid_input"
        }
    }
}
