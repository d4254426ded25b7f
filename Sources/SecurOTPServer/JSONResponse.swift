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
        try parts().response
    }

    /// The response as bytes (a long-poll answered after its route returned writes these).
    func parts() throws -> ResponseParts {
        var buffer = ByteBuffer()
        buffer.writeBytes(try APICoding.encoder().encode(value))
        return ResponseParts(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: buffer)
    }
}

/// A whole response: status, headers and body bytes.
struct ResponseParts: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer

    var response: Response { Response(status: status, headers: headers, body: .init(byteBuffer: body)) }
}

/// 204 No Content, for changes that return nothing.
struct NoContent: ResponseGenerator {
    func response(from request: Request, context: some RequestContext) throws -> Response { Response(status: .noContent) }
}
