import Hummingbird
import SecurOTPService

/// An API value as a JSON response (the service's models know nothing of HTTP).
struct JSONResponse<Value: Encodable & Sendable>: ResponseGenerator {
    var value: Value
    var status: HTTPResponse.Status = .ok

    init(_ value: Value, status: HTTPResponse.Status = .ok) {
        self.value = value
        self.status = status
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var buffer = ByteBuffer()
        buffer.writeBytes(try APICoding.encoder().encode(value))
        return Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: .init(byteBuffer: buffer))
    }
}

/// 204 No Content, for changes that return nothing.
struct NoContent: ResponseGenerator {
    func response(from request: Request, context: some RequestContext) throws -> Response { Response(status: .noContent) }
}
