import Foundation
import Hummingbird
import NIOCore
import SecurOTPService

/// Per-request state: the peer's address and, once authenticated, the caller.
public struct ValidatorRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The connection, where a long-poll parks (LongPolls).
    let channel: (any Channel)?
    /// Set by `Authenticate` before a route runs.
    public var caller: Caller?
    /// Set by routes for the access log (never a code or PIN).
    public var outcome: String?
    /// The largest body a route reads (Hummingbird's `decode` refuses more with 413):
    /// Hummingbird's 2 MiB for admin imports, lowered for host requests (BodyLimit).
    public var maxUploadSize = 2 * 1024 * 1024

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    public var requestDecoder: JSONDecoder { APICoding.decoder() }
    public var responseEncoder: JSONEncoder { APICoding.encoder() }

    /// The address for logs and the audit log: an IP address, or "unix" for a Unix socket.
    public var peer: String {
        guard let remoteAddress else { return "unknown" }
        if let ip = remoteAddress.ipAddress { return ip }
        return "unix"
    }

    /// The authenticated caller; routes behind `Authenticate` always have one.
    func requireCaller() throws(ServiceError) -> Caller {
        guard let caller else { throw ServiceError(.unauthorized, "missing credential") }
        return caller
    }
}
