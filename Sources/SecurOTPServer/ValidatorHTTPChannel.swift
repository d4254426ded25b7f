import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// securotpd's HTTP/1.1 connections: Hummingbird's HTTP1Channel pipeline, trimmed for many
/// idle or parked connections (issue 14: 10,000 waiting logins in under 200 MB;
/// bench/README.md, "Memory of 10,000 waiting logins").
struct ValidatorHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    /// Each connection keeps its receive buffer between reads. NIO's default starts it at
    /// 2 KiB, 20 MB for 10,000 parked long-polls; a request here is a few hundred bytes, and
    /// a larger one grows the buffer as before (up to 64 KiB).
    static let receiveBuffer = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    let base: HTTP1Channel
    var responder: HTTPChannelHandler.Responder { base.responder }

    init(responder: @escaping HTTPChannelHandler.Responder, configuration: HTTP1Channel.Configuration) {
        base = HTTP1Channel(responder: responder, configuration: configuration)
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiveBuffer)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value asyncChannel: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: asyncChannel, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 over ValidatorHTTPChannel.
    static func validatorHTTP1(configuration: HTTP1Channel.Configuration) -> HTTPServerBuilder {
        .init { responder in ValidatorHTTPChannel(responder: responder, configuration: configuration) }
    }
}
