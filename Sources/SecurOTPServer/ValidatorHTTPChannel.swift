import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// securotpd's HTTP/1.1 connections: Hummingbird's HTTP1Channel pipeline, trimmed for many
/// idle or parked connections (issue 14: 10,000 waiting logins in under 200 MB;
/// bench/README.md, "Memory of 10,000 waiting logins").
struct ValidatorHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    /// Each connection keeps its receive buffer between reads. NIO's default starts it at
    /// 2 KiB, 20 MB for 10,000 parked long-polls; a request here is a few hundred bytes, and
    /// a larger one grows the buffer as before (up to 64 KiB).
    static let receiveBuffer = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    let responder: HTTPChannelHandler.Responder
    let configuration: HTTP1Channel.Configuration

    /// HTTP1Channel.setup's pipeline, with one change: the connection's state handler
    /// (Hummingbird's HTTPConnectionStateHandler: `idle_timeout`, closing on graceful shutdown)
    /// comes before `additionalChannelHandlers` (LongPollHandler), not after. LongPollHandler
    /// takes a parked long-poll's placeholder answer off the wire before the state handler sees
    /// it, so the request stays in progress until its real answer is written. In Hummingbird's
    /// order the placeholder ended the request: the idle timer ran while the poll was parked, and
    /// when it fired, the close waited behind the answer and then cut the connection the
    /// client was about to send its next wait on.
    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiveBuffer)
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = configuration.httpDecoder.maxHeaderFieldSize
            limits.maxHeaderListSize = configuration.httpDecoder.maxHeaderListSize
            limits.maxHeaderFieldCount = configuration.httpDecoder.maxHeaderFieldCount
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                                                     withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            let idleTimeout = configuration.idleTimeout.map { Duration.nanoseconds($0.nanoseconds) }
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger))
            try pipeline.addHandlers(configuration.additionalChannelHandlers())
            return try NIOAsyncChannel(wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
        }
    }

    /// Hummingbird's `handleHTTP` loop, except that each request runs in a task of its own and
    /// the connection's task keeps nothing of it while it waits for the next. A task keeps the
    /// task-allocator slabs of the deepest call it ever made until it ends, and the connection's
    /// task lives as long as the connection: running the responder there (Application's
    /// closure, the router, the middleware) left ~9 KiB of slabs and the last request's head
    /// (~2 KiB) on every parked or idle connection. Requests on a connection still run one at a
    /// time, in order; the request's task ends with its answer.
    func handle(value asyncChannel: Value, logger: Logger) async {
        let channel = asyncChannel.channel
        do {
            try await withTaskCancellationHandler {
                try await asyncChannel.executeThenClose { inbound, outbound in
                    let parts = RequestParts(inbound.makeAsyncIterator(), channel: channel, deadline: configuration.idleTimeout)
                    try await serve(parts, outbound: outbound, channel: channel, logger: logger)
                }
            } onCancel: {
                channel.close(mode: .input, promise: nil)
            }
        } catch {
            logger.trace("Failed to read/write to Channel. Error: \(error)")
        }
    }

    // serve, respond and badRequest are separate and not inlined: each async frame lives in the
    // connection's task for as long as it is the deepest so far, so the frames that stay
    // during the wait for the next head are kept small.
    @inline(never)
    private func serve(_ parts: RequestParts, outbound: NIOAsyncChannelOutboundWriter<HTTPResponsePart>, channel: any Channel, logger: Logger) async throws {
        do {
            while let head = try await parts.nextHead() {
                let closes = head.headerFields[.connection] == "close"
                try await respond(to: head, parts: parts, outbound: outbound, channel: channel).value
                if closes { break }
            }
        } catch is HTTPParserError {
            try await Self.badRequest(outbound, logger: logger)
        } catch is RequestParts.UnreadBody {
            // The client goes on sending a body no route read (after an early 401 or 413): its
            // answer is out; read no more, close once the answer is written. NIOSSLHandler
            // refuses a half-close (operationUnsupported): then close it all (it sends what is
            // written, then close_notify), else the connection stays until the idle timeout.
            channel.close(mode: .input).whenFailure { _ in channel.close(promise: nil) }
        }
        outbound.finish()
        try await channel.closeFuture.get()
    }

    /// The request's task: it reads the body and runs the responder.
    @inline(never)
    private func respond(to head: HTTPRequest, parts: RequestParts, outbound: NIOAsyncChannelOutboundWriter<HTTPResponsePart>,
                         channel: any Channel) -> Task<Void, any Error> {
        Task {
            let request = Request(head: head, body: RequestBody(asyncSequence: BodyParts(parts: parts)))
            try await responder(request, ResponseWriter(outbound: outbound), channel)
        }
    }

    /// As Hummingbird: a request that does not parse gets 400 and the connection closes.
    @inline(never)
    private static func badRequest(_ outbound: NIOAsyncChannelOutboundWriter<HTTPResponsePart>, logger: Logger) async throws {
        logger.debug("HTTP parse error, closing connection")
        try await outbound.write(.head(.init(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])))
        try await outbound.write(.end(nil))
    }
}

/// A connection's request parts, read by its task (the next head) and by the request's task
/// (the body), never both at once: the connection's task waits for the request's.
final class RequestParts: @unchecked Sendable {
    private var iterator: NIOAsyncChannelInboundStream<HTTPRequestPart>.AsyncIterator
    /// The current request's body was read to its end (or there is no current request).
    private var bodyDone = true {
        didSet { if bodyDone { bodyTimer?.cancel(); bodyTimer = nil } }
    }
    private let channel: any Channel
    /// How long a request's body may take to arrive after its head (`idle_timeout`): every
    /// part resets the connection's idle timer, so without this a client sending a byte now
    /// and then would hold the connection, and a request task, for as long as it likes.
    private let deadline: TimeAmount?
    /// Closes the connection when the current body is not in by `deadline`.
    private var bodyTimer: Scheduled<Void>?

    struct UnexpectedPart: Error {}
    /// More of a body than `maxUnreadBody` was left unread by the answered request.
    struct UnreadBody: Error {}
    /// What of a body the responder did not read is skipped to reach the next request, up to
    /// this much (BodyLimit.host); past it the connection is closed instead.
    static let maxUnreadBody = BodyLimit.host

    init(_ iterator: NIOAsyncChannelInboundStream<HTTPRequestPart>.AsyncIterator, channel: any Channel, deadline: TimeAmount?) {
        self.iterator = iterator
        self.channel = channel
        self.deadline = deadline
    }

    deinit { bodyTimer?.cancel() }

    /// The next request's head, after what the responder left of the current body (at most
    /// `maxUnreadBody`, else UnreadBody); nil when the client is done. One loop over the parts,
    /// not through nextBodyPart: the connection's task keeps a slab for each level of its
    /// deepest call.
    func nextHead() async throws -> HTTPRequest? {
        var skipped = 0
        while let part = try await iterator.next() {
            switch part {
            case .head(let head) where bodyDone:
                bodyDone = false
                // Only a request that announces a body: the end of an empty one is read only
                // after its responder returns, and a slow answer is no slow client.
                let announcesBody = head.headerFields[.transferEncoding] != nil
                    || (head.headerFields[.contentLength].map { $0 != "0" } ?? false)
                if let deadline, announcesBody {
                    let channel = channel
                    bodyTimer = channel.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
                }
                return head
            case .body(let buffer) where !bodyDone:
                skipped += buffer.readableBytes
                if skipped > Self.maxUnreadBody { throw UnreadBody() }
            case .end where !bodyDone: bodyDone = true
            case .head, .body, .end: throw UnexpectedPart()
            }
        }
        return nil
    }

    func nextBodyPart() async throws -> ByteBuffer? {
        guard !bodyDone else { return nil }
        switch try await iterator.next() {
        case .body(let buffer): return buffer
        case .end, nil:
            bodyDone = true
            return nil
        case .head: throw UnexpectedPart()
        }
    }
}

/// The current request's body, as Request reads it.
struct BodyParts: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let parts: RequestParts

    struct AsyncIterator: AsyncIteratorProtocol {
        let parts: RequestParts
        mutating func next() async throws -> ByteBuffer? { try await parts.nextBodyPart() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(parts: parts) }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 over ValidatorHTTPChannel.
    static func validatorHTTP1(configuration: HTTP1Channel.Configuration) -> HTTPServerBuilder {
        .init { responder in ValidatorHTTPChannel(responder: responder, configuration: configuration) }
    }
}
