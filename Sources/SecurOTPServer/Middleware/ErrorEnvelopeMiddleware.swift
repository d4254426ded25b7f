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
        } catch {
            return Self.parts(for: error, logger: context.logger).response
        }
    }

    /// The envelope of `error` (also for a long-poll's error after its route returned).
    static func parts(for error: any Error, logger: Logger) -> ResponseParts {
        switch error {
        case let error as ServiceError:
            var parts = envelope(status: .init(code: error.httpStatus), code: error.code.rawValue, message: error.message)
            if error.code == .rateLimited { parts.headers[.retryAfter] = "1" }
            if error.code == .unauthorized { parts.headers[.wwwAuthenticate] = "Bearer realm=\"securotpd\"" }
            return parts
        case let error as HTTPError:
            return envelope(status: error.status, code: code(for: error.status), message: error.body ?? error.status.reasonPhrase)
        case let error as any HTTPResponseError:
            return envelope(status: error.status, code: code(for: error.status), message: error.status.reasonPhrase)
        default:
            logger.error("internal error", metadata: ["error": "\(String(reflecting: error))"])
            return envelope(status: .internalServerError, code: "internal", message: "internal error; see the validator's log")
        }
    }

    static func envelope(status: HTTPResponse.Status, code: String, message: String) -> ResponseParts {
        var buffer = ByteBuffer()
        let body = (try? APICoding.encoder().encode(ErrorEnvelope(code: code, message: message))).map { Array($0) } ?? Array("{}".utf8)
        buffer.writeBytes(body)
        return ResponseParts(status: status, headers: [.contentType: "application/json"], body: buffer)
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
