import Hummingbird
import NIOCore
import SecurOTPCore
import SecurOTPService

/// Holds each client address to `rate_limit_web` requests per minute on the routes that take
/// no credential (`/v1/web/*`, docs/push.md "Phones without an app"; `/v1/devices/activate`,
/// "Limits are rates"), one bucket per address for all of them. The address is the
/// connection's peer: securotpd trusts no forwarding header, so behind a reverse proxy every
/// phone shares the proxy's bucket (docs/validator.md).
struct AddressRateLimit: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    let limits: RateLimits
    let metrics: ValidatorMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let key = Self.key(context.remoteAddress)
        switch limits.allowAddress(key) {
        case .allowed:
            return try await next(request, context)
        case .refusedFirst:
            // Once per run of refusals, so a flood does not flood the log too.
            context.logger.warning("address over the web rate limit; refusing its requests without a credential with 429 until it slows down",
                                   metadata: ["peer": "\(TerminalText.bounded(key, maxBytes: 64))", "path": "\(TerminalText.bounded(request.uri.path, maxBytes: 64))",
                                              "limit_per_minute": "\(Int(limits.addressRate * 60))", "setting": "rate_limit_web"])
        case .refused:
            break
        }
        metrics.rateLimited.increment()
        throw ServiceError(.rateLimited, "too many requests from this address; wait a minute and try again")
    }

    /// The bucket of an address: an IPv4 address itself, an IPv6 address's /64 (one
    /// subscriber's network, which a single attacker holds whole), an IPv4-mapped IPv6 address
    /// as IPv4, "unix" for a Unix socket.
    static func key(_ address: SocketAddress?) -> String {
        switch address {
        case .v4?:
            return address?.ipAddress ?? "unknown"
        case .v6(let ipv6)?:
            let bytes = withUnsafeBytes(of: ipv6.address.sin6_addr) { Array($0) }
            guard bytes.count == 16 else { return address?.ipAddress ?? "unknown" }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                return bytes[12..<16].map { String($0) }.joined(separator: ".")
            }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        case .unixDomainSocket?:
            return "unix"
        case nil:
            return "unknown"
        }
    }
}
