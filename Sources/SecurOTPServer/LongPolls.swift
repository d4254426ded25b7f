import Glibc
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Long-polls answered by the connection, not by a waiting task (issue 14: 10,000 waiting
/// logins in under 200 MB; bench/README.md, "Memory of 10,000 waiting logins"). A request
/// task parked in a long-poll keeps its whole async chain — Hummingbird's handler, the
/// middleware, the route — in task-allocator slabs, about 33 KiB per waiting login. Instead,
/// when a long-poll's first look finds nothing to answer yet, the route stages a `ParkedPoll`
/// for its connection and returns a marker response; the connection's `LongPollHandler` keeps
/// that marker off the wire and writes the real answer later, from the event loop, when the
/// ticket is notified or its one scheduled timeout fires. The route's authentication, rate
/// limits, validation and first look are unchanged; each later look is the same step.
final class LongPolls: Sendable {
    /// Marks the route's placeholder answer; never leaves the server.
    static let marker = HTTPField.Name("x-securotp-long-poll")!

    private struct State {
        var connections: Set<ObjectIdentifier> = []
        var staged: [ObjectIdentifier: ParkedPoll] = [:]
        /// Connections whose handler holds a parked poll's marker and owes its answer.
        var parked: Set<ObjectIdentifier> = []
    }

    private let state = NIOLockedValueBox(State())

    /// The handler for a new connection.
    func handler() -> LongPollHandler { LongPollHandler(polls: self) }

    func connect(_ channel: any Channel) { state.withLockedValue { _ = $0.connections.insert(ObjectIdentifier(channel)) } }

    /// On the channel's event loop.
    func disconnect(_ channel: any Channel) {
        let staged = state.withLockedValue {
            $0.connections.remove(ObjectIdentifier(channel))
            $0.parked.remove(ObjectIdentifier(channel))
            return $0.staged.removeValue(forKey: ObjectIdentifier(channel))
        }
        staged?.cancel()
    }

    /// Whether `channel` has a LongPollHandler (the router tests' channels have none: they wait in the task).
    func serves(_ channel: (any Channel)?) -> Bool {
        guard let channel else { return false }
        return state.withLockedValue { $0.connections.contains(ObjectIdentifier(channel)) }
    }

    /// Stages `poll` for the connection's next marker. At most one poll per connection is staged
    /// or parked: a pipelined second long-poll would otherwise be taken by the first's marker
    /// (answering the wrong request) or left holding its slot; it waits in its task instead. A
    /// connection already gone stages nothing (its handler would never take the poll).
    func stage(_ poll: ParkedPoll, on channel: any Channel) -> Bool {
        state.withLockedValue {
            let id = ObjectIdentifier(channel)
            guard $0.connections.contains(id), $0.staged[id] == nil, !$0.parked.contains(id) else { return false }
            $0.staged[id] = poll
            return true
        }
    }

    func takeStaged(_ channel: any Channel) -> ParkedPoll? {
        state.withLockedValue {
            let id = ObjectIdentifier(channel)
            guard let poll = $0.staged.removeValue(forKey: id) else { return nil }
            $0.parked.insert(id)
            return poll
        }
    }

    /// The connection wrote its parked poll's answer: it may park another.
    func answered(_ channel: any Channel) { state.withLockedValue { _ = $0.parked.remove(ObjectIdentifier(channel)) } }

    /// AccessLog's line for a parked long-poll, written with the answer's status.
    func whenAnswered(on channel: any Channel, _ record: @escaping @Sendable (HTTPResponse.Status) -> Void) {
        state.withLockedValue { $0.staged[ObjectIdentifier(channel)]?.whenAnswered = record }
    }

    /// Answers a long-poll: at once when the first look is final; else parked on the
    /// connection (a LongPollHandler in its pipeline), or, without one, waited for in this task.
    func answer<Value: Encodable & Sendable>(context: ValidatorRequestContext, waiters: PushWaiters,
                                             step: @escaping @Sendable () async throws -> PollStep<Value>) async throws -> Response {
        switch try await step() {
        case .done(let value):
            return try JSONResponse(value).parts().response
        case .wait(let ticket, let seconds):
            guard let channel = context.channel, serves(channel) else {
                await waiters.wait(ticket, seconds: seconds)
                return try JSONResponse(try await waiters.poll(step)).parts().response
            }
            let logger = context.logger
            let poll = ParkedPoll(eventLoop: channel.eventLoop, waiters: waiters) {
                do {
                    switch try await step() {
                    case .done(let value): return .answer(try JSONResponse(value).parts())
                    case .wait(let ticket, let seconds): return .wait(ticket: ticket, seconds: seconds)
                    }
                } catch {
                    return .answer(ErrorEnvelopeMiddleware.parts(for: error, logger: logger))
                }
            }
            guard stage(poll, on: channel) else {
                await waiters.wait(ticket, seconds: seconds)
                return try JSONResponse(try await waiters.poll(step)).parts().response
            }
            await poll.park(ticket, seconds: seconds)
            return Response(status: .ok, headers: [Self.marker: "1"])
        }
    }
}

/// One waiting long-poll: its ticket, its timeout and the look that decides it. Everything
/// but `park` runs on the connection's event loop, which orders wake-ups, answers and
/// disconnection: the answer is written exactly once, or the ticket is dropped.
final class ParkedPoll: @unchecked Sendable {
    enum Look: Sendable {
        case answer(ResponseParts)
        case wait(ticket: Int, seconds: Double)
    }

    private enum State {
        case waiting(ticket: Int, timeout: Scheduled<Void>)
        case looking
        case answered(ResponseParts)
        case finished
    }

    let eventLoop: any EventLoop
    private let waiters: PushWaiters
    private let look: @Sendable () async -> Look
    private var state = State.looking
    private var connection: LongPollHandler?
    /// Set (under LongPolls' lock) before the connection sees the marker, read after.
    var whenAnswered: (@Sendable (HTTPResponse.Status) -> Void)?

    init(eventLoop: any EventLoop, waiters: PushWaiters, look: @escaping @Sendable () async -> Look) {
        self.eventLoop = eventLoop
        self.waiters = waiters
        self.look = look
    }

    /// Waits on `ticket`. The timeout is queued on the loop before the wake-up can be, so a
    /// wake-up always finds it.
    func park(_ ticket: Int, seconds: Double) async {
        eventLoop.execute { self.wait(ticket, seconds: seconds) }
        await waiters.whenNotified(ticket) { [self] in eventLoop.execute { self.wake(ticket) } }
    }

    private func wait(_ ticket: Int, seconds: Double) {
        guard case .looking = state else {
            // The client left first.
            Task { await waiters.finish(ticket) }
            return
        }
        let timeout = eventLoop.scheduleTask(in: .nanoseconds(Int64(max(0, seconds) * 1_000_000_000))) { self.wake(ticket) }
        state = .waiting(ticket: ticket, timeout: timeout)
    }

    /// The ticket was notified, or the wait is over: look again.
    private func wake(_ ticket: Int) {
        guard case .waiting(let waited, let timeout) = state, waited == ticket else { return }
        timeout.cancel()
        state = .looking
        Task {
            await waiters.finish(ticket)
            let next = await look()
            eventLoop.execute { self.looked(next) }
            if case .wait(let ticket, _) = next {
                await waiters.whenNotified(ticket) { [self] in eventLoop.execute { self.wake(ticket) } }
            }
        }
    }

    private func looked(_ next: Look) {
        switch next {
        case .answer(let parts):
            state = .answered(parts)
            deliver()
        case .wait(let ticket, let seconds):
            wait(ticket, seconds: seconds)
        }
    }

    /// The connection took the marker off the wire: it writes the answer when there is one.
    func attach(_ connection: LongPollHandler) {
        self.connection = connection
        deliver()
    }

    private func deliver() {
        guard case .answered(let parts) = state, let connection else { return }
        state = .finished
        self.connection = nil
        connection.write(answer: parts)
        whenAnswered?(parts.status)
    }

    /// The connection closed: nothing will be written; the ticket is dropped now, not at its timeout.
    func cancel() {
        connection = nil
        switch state {
        case .waiting(let ticket, let timeout):
            timeout.cancel()
            Task { await waiters.finish(ticket) }
        case .looking, .answered, .finished:
            break
        }
        state = .finished
    }
}

/// In each connection's pipeline, after the HTTP codec: takes a parked long-poll's marker
/// response off the wire and writes its answer when ParkedPoll has one. Whatever Hummingbird
/// writes meanwhile (the answer to a pipelined request, a close) waits behind it, so answers
/// stay in request order.
final class LongPollHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let polls: LongPolls
    private var context: ChannelHandlerContext?
    /// The long-poll whose answer is owed, and the marker's head (Date, Server) it is written with.
    private var parked: ParkedPoll?
    private var markerHead: HTTPResponse?
    private var readingMarker = false
    private var heldWrites: [(NIOAny, EventLoopPromise<Void>?)] = []
    private var heldCloses: [(CloseMode, EventLoopPromise<Void>?)] = []
    /// The client closed its sending side before its long-poll's marker came.
    private var inputClosed = false
    /// Response parts of pipelined requests held behind an owed answer; past this the client is
    /// flooding without reading and the connection is closed (memory stays bounded).
    static let maxHeldWrites = 96

    init(polls: LongPolls) { self.polls = polls }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        polls.connect(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        leave(context)
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        leave(context)
        context.fireChannelInactive()
    }

    /// The client closed its side (the server allows half-closure): one waiting on a long-poll
    /// has left; its slot is freed now, not at its timeout.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            inputClosed = true
            if parked != nil {
                leave(context)
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func leave(_ context: ChannelHandlerContext) {
        polls.disconnect(context.channel)
        parked?.cancel()
        parked = nil
        markerHead = nil
        let writes = heldWrites, closes = heldCloses
        heldWrites = []
        heldCloses = []
        for (_, promise) in writes { promise?.fail(ChannelError.ioOnClosedChannel) }
        for (mode, promise) in closes { context.close(mode: mode, promise: promise) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if readingMarker {
            promise?.succeed(())
            if case .end = part {
                readingMarker = false
                parked?.attach(self)
            }
            return
        }
        if parked == nil, case .head(let head) = part, head.headerFields[LongPolls.marker] != nil {
            promise?.succeed(())
            guard let poll = polls.takeStaged(context.channel) else {
                // Cannot happen (the route stages before it returns); fail closed, never a blank 200.
                write(answer: ErrorEnvelopeMiddleware.envelope(status: .internalServerError, code: "internal",
                                                               message: "internal error; see the validator's log"), markerHead: head)
                readingMarker = true
                return
            }
            parked = poll
            markerHead = head
            readingMarker = true
            if inputClosed {
                // The client left while the route ran: free the slot now, not at the timeout.
                leave(context)
                context.close(promise: nil)
            }
            return
        }
        if parked != nil {
            guard heldWrites.count < Self.maxHeldWrites else {
                promise?.fail(ChannelError.outputClosed)
                leave(context)
                context.close(promise: nil)
                return
            }
            heldWrites.append((data, promise))
            return
        }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        if parked == nil { context.flush() }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // Closing the input (Hummingbird on cancellation) does not cut the owed answer off.
        guard parked != nil, mode != .input else { return context.close(mode: mode, promise: promise) }
        heldCloses.append((mode, promise))
    }

    /// ParkedPoll's answer: written with the marker's Server and a Date of now, then what waited behind it.
    func write(answer: ResponseParts) {
        guard let head = markerHead else { return }
        parked = nil
        markerHead = nil
        write(answer: answer, markerHead: head)
        guard let context else { return }
        polls.answered(context.channel)
        let writes = heldWrites, closes = heldCloses
        heldWrites = []
        heldCloses = []
        for (data, promise) in writes { context.write(data, promise: promise) }
        context.flush()
        for (mode, promise) in closes { context.close(mode: mode, promise: promise) }
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// RFC 9110's IMF-fixdate ("Thu, 26 Nov 2026 11:47:28 GMT"), independent of the locale.
    /// Once per parked answer: the names are built once, not on every call.
    static func httpDate(_ seconds: time_t) -> String {
        var clock = seconds
        var parts = tm()
        guard gmtime_r(&clock, &parts) != nil else { return "" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday) % 7]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon) % 12]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    private func write(answer: ResponseParts, markerHead: HTTPResponse) {
        guard let context else { return }
        var fields = markerHead.headerFields
        // The marker's Date is when the wait began, up to 30 s ago; the phone page sets its clock
        // by Date, and a stale one hid expiries from it.
        fields[.date] = Self.httpDate(time(nil))
        fields[LongPolls.marker] = nil
        fields[.contentLength] = nil
        for field in answer.headers { fields[field.name] = field.value }
        fields[.contentLength] = String(answer.body.readableBytes)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: answer.status, headerFields: fields))), promise: nil)
        if answer.body.readableBytes > 0 { context.write(wrapOutboundOut(.body(answer.body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
