import Foundation
import Hummingbird
import HummingbirdTesting
import SecurOTPServer
import SecurOTPService
import Testing

/// Push long-polls over real connections (LongPolls: a waiting request parks on its connection,
/// not in a task): answered once each by their own decision, the timeout's answer as before,
/// a client that leaves frees its slot at once, and answers stay in request order.
@Suite("Validator API: push long-polls parked on the connection")
struct PushLongPollTests {
    /// Runs `body` against the application on a loopback port (its real pipeline).
    static func live<R: Sendable>(_ fixture: ValidatorFixture, _ body: @Sendable (APIClient, _ port: Int) async throws -> R) async throws -> R {
        do {
            let result = try await fixture.application().test(.live) { client in try await body(APIClient(client: client), try #require(client.port)) }
            await fixture.cleanUp()
            return result
        } catch {
            await fixture.cleanUp()
            throw error
        }
    }

    static func request(_ path: String, _ body: [String: Any], bearer: String, extraHeaders: String = "") throws -> String {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        return "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(bearer)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(json.utf8.count)\r\n\(extraHeaders)\r\n\(json)"
    }

    @Test("many waiting hosts and a device, each answered once by its own change")
    func manyWaiters() async throws {
        let fixture = try await ValidatorFixture.make()
        // Setup in router mode; the live part uses only raw connections (no 15 s client timeout
        // to trip in the full parallel run on the shared cores).
        let users = (0..<8).map { "user\($0)" }
        let (ids, watcher) = try await fixture.application().test(.router) { testClient in
            let client = APIClient(client: testClient)
            var ids: [String] = []
            for user in users {
                _ = try await PushAPITests.enrollDevice(client, fixture, user)
                ids.append(try #require(try await PushAPITests.open(client, fixture, user).string("id")))
            }
            return (ids, try await PushAPITests.enrollDevice(client, fixture, "watcher"))
        }
        try await Self.live(fixture) { _, port in
            let control = try RawHTTPConnection(port: port)
            let connections = try ids.map { id in
                let connection = try RawHTTPConnection(port: port)
                try connection.send(try Self.request("/v1/push/wait", ["id": id, "wait": 30], bearer: fixture.host))
                return connection
            }
            let device = try RawHTTPConnection(port: port)
            try device.send(try Self.request("/v1/device/requests", ["wait": 30], bearer: watcher.credential))
            #expect(await fixture.waiters.held(atLeast: ids.count + 1), "the long-poll never parked")
            let started = Date()
            // Each request decided in turn; its own wait, and only it, answers.
            for (index, id) in ids.enumerated() {
                try control.send(try Self.request("/v1/push/cancel", ["id": id], bearer: fixture.host))
                let cancelled = try await control.response()
                #expect(cancelled.status == 200, "\(cancelled.text)")
                let answer = try await connections[index].response()
                #expect(answer.status == 200 && answer.json["id"] as? String == id && answer.json["state"] as? String == "cancelled", "\(answer.text)")
                #expect(answer.headers["content-type"] == "application/json" && answer.headers["cache-control"] == "no-store", "\(answer.headers)")
                #expect(answer.headers["x-securotp-long-poll"] == nil && answer.headers["server"] == "securotpd", "\(answer.headers)")
                for later in connections[(index + 1)...].prefix(1) { #expect(try await later.nothingYet(), "another request's wait answered") }
            }
            try control.send(try Self.request("/v1/push", ["user": "watcher", "nonce": PushAPITests.nonce, "number": "492817", "service": "sshd",
                                                           "remote_address": "192.0.2.7", "tty": "ssh", "command": ""], bearer: fixture.host))
            let opened = try #require(try await control.response().json["id"] as? String)
            let list = try await device.response()
            #expect(list.status == 200 && (list.json["requests"] as? [[String: Any]])?.map { $0["id"] as? String } == [opened], "\(list.text)")
            #expect(Date().timeIntervalSince(started) < 25, "the waits were answered by their changes, not their 30 s timeout")
            // Exactly once: the connections carry no second answer, and stay usable.
            for connection in connections.prefix(3) {
                #expect(try await connection.nothingYet())
                try connection.send(try Self.request("/v1/push/wait", ["id": ids[0], "wait": 1], bearer: fixture.host))
                let again = try await connection.response()
                #expect(again.status == 200 && again.json["state"] as? String == "cancelled", "\(again.text)")
            }
        }
    }

    @Test("the timeout's answer is the router's: the request's status, pending")
    func timeoutAnswer() async throws {
        let fixture = try await ValidatorFixture.make()
        let (id, routed) = try await fixture.application().test(.router) { testClient in
            let client = APIClient(client: testClient)
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let id = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
            return (id, try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host).text)
        }
        try await Self.live(fixture) { _, port in
            let connection = try RawHTTPConnection(port: port)
            let started = Date()
            try connection.send(try Self.request("/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host))
            let answer = try await connection.response()
            let waited = Date().timeIntervalSince(started)
            #expect(answer.status == 200 && answer.text == routed, "live \(answer.text), router \(routed)")
            #expect(waited >= 0.9 && waited < 10, "waited \(waited) s for a 1 s wait")
            #expect(answer.headers["content-length"] == String(answer.text.utf8.count))
            // Date says when the answer was written, not when the wait began (the phone page sets its clock by it).
            let format = DateFormatter()
            format.locale = Locale(identifier: "en_US_POSIX")
            format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
            let stamped = try #require(answer.headers["date"].flatMap { format.date(from: $0) }, "\(answer.headers)")
            #expect(abs(stamped.timeIntervalSinceNow) < 1.5 && stamped.timeIntervalSince(started) > 0, "Date \(answer.headers["date"] ?? "") for an answer at \(Date())")
            // Refusals still come from the route, before any wait.
            try connection.send(try Self.request("/v1/push/wait", ["id": id, "wait": 31], bearer: fixture.host))
            let refused = try await connection.response()
            #expect(refused.status == 400 && (refused.json["error"] as? [String: Any])?["code"] as? String == "invalid_input", "\(refused.text)")
            try connection.send(try Self.request("/v1/push/wait", ["id": id, "wait": 1], bearer: "sotp_h_wrong"))
            let unauthorized = try await connection.response()
            #expect(unauthorized.status == 401 && unauthorized.headers["www-authenticate"] != nil, "\(unauthorized.text)")
        }
    }

    @Test("a client that leaves while waiting frees its slot at once")
    func disconnectFreesSlot() async throws {
        let fixture = try await ValidatorFixture.make { $0.maxPushWaiters = 2 }
        try await Self.live(fixture) { client, port in
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let id = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
            let leaving = try RawHTTPConnection(port: port), staying = try RawHTTPConnection(port: port)
            for connection in [leaving, staying] {
                try connection.send(try Self.request("/v1/push/wait", ["id": id, "wait": 30], bearer: fixture.host))
            }
            let sent = Date()
            #expect(await fixture.waiters.held(atLeast: 2), "the long-poll never parked")
            let full = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host)
            #expect(full.status == 503 && full.errorCode == "unavailable", "\(full.text)")
            leaving.close()
            var freed = false
            for _ in 0..<40 where !freed {
                try await Task.sleep(for: .milliseconds(100))
                freed = try await client.call(.post, "/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host).status == 200
            }
            #expect(freed, "the slot of the client that left is still held (its 30 s wait)")
            _ = try await client.call(.post, "/v1/push/cancel", ["id": id], bearer: fixture.host)
            let answer = try await staying.response()
            // The one that stayed is answered by the cancel, unless the loaded cores took so
            // long that its own 30 s wait ran out first (then it says pending, as it should).
            let waitRanOut = Date().timeIntervalSince(sent) >= 29
            #expect(answer.json["state"] as? String == (waitRanOut ? "pending" : "cancelled"), "\(answer.text)")
        }
    }

    @Test("two long-polls pipelined on one connection: each gets its own answer, in order, and no placeholder leaks")
    func pipelinedPolls() async throws {
        let fixture = try await ValidatorFixture.make { $0.maxPushWaiters = 2 }
        try await Self.live(fixture) { client, port in
            var ids: [String] = []
            for user in ["alice", "bob"] {
                _ = try await PushAPITests.enrollDevice(client, fixture, user)
                ids.append(try #require(try await PushAPITests.open(client, fixture, user).string("id")))
            }
            for _ in 0..<5 {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(try Self.request("/v1/push/wait", ["id": ids[0], "wait": 2], bearer: fixture.host)
                    + Self.request("/v1/push/wait", ["id": ids[1], "wait": 1], bearer: fixture.host))
                let first = try await connection.response()
                let second = try await connection.response()
                #expect(first.json["id"] as? String == ids[0] && first.json["state"] as? String == "pending", "\(first.text)")
                #expect(second.json["id"] as? String == ids[1] && second.json["state"] as? String == "pending", "\(second.text)")
                #expect(first.headers["x-securotp-long-poll"] == nil && second.headers["x-securotp-long-poll"] == nil)
                #expect(try await connection.nothingYet(), "a third answer (a leaked placeholder) followed")
                connection.close()
            }
            // No slot is left behind: two waits at once (push_waiters = 2) are both taken.
            let waits = try [RawHTTPConnection(port: port), RawHTTPConnection(port: port)]
            for (connection, id) in zip(waits, ids) {
                try connection.send(try Self.request("/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host))
            }
            for connection in waits {
                let answer = try await connection.response()
                #expect(answer.status == 200, "a slot is still held by an earlier pipelined wait: \(answer.text)")
            }
        }
    }

    @Test("a client flooding requests behind a waiting long-poll without reading is cut off")
    func floodBehindWait() async throws {
        let fixture = try await ValidatorFixture.make()
        try await Self.live(fixture) { client, port in
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let id = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
            let connection = try RawHTTPConnection(port: port)
            // The wait outlasts the check. The flood is of requests for no route: each is answered
            // at once without the store, so even loaded cores read the 96 that close the
            // connection well within the wait (200 preflights, each a store read, once took longer).
            var flood = try Self.request("/v1/push/wait", ["id": id, "wait": 30], bearer: fixture.host)
            for _ in 0..<200 { flood += "GET /v1/no-such-route HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" }
            try connection.send(flood)
            #expect(try await connection.closedByServer(within: 25), "200 answers were held in memory behind the wait")
        }
    }

    @Test("a request pipelined behind a waiting one is answered after it; Connection: close closes after the answer")
    func order() async throws {
        let fixture = try await ValidatorFixture.make()
        try await Self.live(fixture) { client, port in
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            let id = try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
            let connection = try RawHTTPConnection(port: port)
            try connection.send(try Self.request("/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host)
                + Self.request("/v1/preflight", ["user": "alice"], bearer: fixture.host))
            let first = try await connection.response()
            let second = try await connection.response()
            #expect(first.json["state"] as? String == "pending", "\(first.text)")
            #expect(second.json["has_tokens"] != nil, "\(second.text)")

            let closing = try RawHTTPConnection(port: port)
            try closing.send(try Self.request("/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host, extraHeaders: "Connection: close\r\n"))
            let last = try await closing.response()
            #expect(last.status == 200 && last.json["state"] as? String == "pending", "\(last.text)")
            #expect(try await closing.closedByServer(), "the connection stays open after Connection: close")
        }
    }
}

extension PushLongPollTests {
    @Test("idle_timeout closes a connection without a request in progress (silent, or half a head), never a parked long-poll")
    func idleTimeout() async throws {
        // 5 s, not less: in CI's parallel run an event loop may stall for seconds, and a read
        // that waits behind the idle timer's event is cut (seen with 1 s and with 3 s).
        let fixture = try await ValidatorFixture.make { $0.idleTimeoutSeconds = 5 }
        // Setup in router mode: the live part uses only raw connections, which the timeout may close.
        let id = try await fixture.application().test(.router) { testClient in
            let client = APIClient(client: testClient)
            _ = try await PushAPITests.enrollDevice(client, fixture, "alice")
            return try #require(try await PushAPITests.open(client, fixture, "alice").string("id"))
        }
        try await Self.live(fixture) { _, port in
            let silent = try RawHTTPConnection(port: port)
            let slow = try RawHTTPConnection(port: port)
            try slow.send("POST /v1/push/wait HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            // Parked three times as long as the idle timeout.
            let waiting = try RawHTTPConnection(port: port)
            try waiting.send(try Self.request("/v1/push/wait", ["id": id, "wait": 15], bearer: fixture.host))
            #expect(try await silent.closedByServer(within: 25), "a connection that never sent a request stayed open")
            #expect(try await slow.closedByServer(within: 25), "half a request head kept the connection open")
            let answer = try await waiting.response()
            #expect(answer.status == 200 && answer.json["id"] as? String == id && answer.json["state"] as? String == "pending", "\(answer.text)")
            // The connection was not marked idle while parked: the next wait goes out on it at once.
            try waiting.send(try Self.request("/v1/push/wait", ["id": id, "wait": 1], bearer: fixture.host))
            let next = try await waiting.response()
            #expect(next.status == 200 && next.json["state"] as? String == "pending", "\(next.text)")
            // Answered, it is idle like any other connection.
            #expect(try await waiting.closedByServer(within: 25), "an idle connection stayed open after its long-poll's answer")
        }
    }
}

extension PushLongPollTests {
    @Test("a request that does not parse is answered 400 and the connection closes (ValidatorHTTPChannel, as Hummingbird)")
    func unparsable() async throws {
        let fixture = try await ValidatorFixture.make()
        try await Self.live(fixture) { _, port in
            let connection = try RawHTTPConnection(port: port)
            try connection.send("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n")
            let answer = try await connection.response()
            #expect(answer.status == 400 && answer.headers["connection"] == "close", "\(answer.status) \(answer.headers)")
            #expect(try await connection.closedByServer(), "the connection stayed open after a request that does not parse")
        }
    }
}

extension PushLongPollTests {
    @Test("a body no route reads is skipped up to 64 KiB to reach the next request; past that the connection closes after the answer")
    func unreadBody() async throws {
        let fixture = try await ValidatorFixture.make()
        try await Self.live(fixture) { _, port in
            // Refused before its body is read (no credential): a small body is skipped, the connection goes on.
            let small = try RawHTTPConnection(port: port)
            try small.send("POST /v1/preflight HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 1000))
            #expect(try await small.response().status == 401)
            try small.send(try Self.request("/v1/preflight", ["user": "alice"], bearer: "sotp_h_unknown"))
            #expect(try await small.response().status == 401, "the connection did not go on after a small unread body")
            // A large one keeps coming: not read to its end, the connection closes after the answer.
            let large = try RawHTTPConnection(port: port)
            try large.send("POST /v1/preflight HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n")
            try large.send(String(repeating: "x", count: 256 * 1024))
            let answer = try await large.response()
            #expect(answer.status == 401 || answer.status == 413, "\(answer.status) \(answer.text)")
            #expect(try await large.closedByServer(within: 10), "the server went on reading a body nobody reads")
        }
    }
}

extension PushLongPollTests {
    @Test("a request must arrive whole within idle_timeout of its head: a body sent a byte a second is cut, read by a route or not")
    func slowBody() async throws {
        let fixture = try await ValidatorFixture.make { $0.idleTimeoutSeconds = 5 }
        try await Self.live(fixture) { _, port in
            for path in ["/v1/web/enroll", "/v1/no-such-route"] {
                let connection = try RawHTTPConnection(port: port)
                try connection.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
                let start = Date()
                var closed = false
                // A byte a second for up to 30 s: never silent for as long as idle_timeout.
                for _ in 0..<30 where !closed {
                    closed = try await connection.closedByServer(within: 1) || !connection.trySend(" ")
                }
                #expect(closed, "\(path): a body trickling in kept the connection open for 30 s")
                #expect(Date().timeIntervalSince(start) < 25, "\(path): cut only after \(Date().timeIntervalSince(start)) s")
            }
        }
    }
}

/// A plain blocking HTTP/1.1 client on one TCP connection: requests written as given, responses
/// read with Content-Length. Lets a test pipeline, hold and drop connections as it likes.
final class RawHTTPConnection: @unchecked Sendable {
    struct Answer {
        let status: Int
        let headers: [String: String]
        let text: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }
    }

    private var descriptor: Int32
    private var buffered: [UInt8] = []

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        try #require(connected, "connect to 127.0.0.1:\(port)")
    }

    deinit { close() }

    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
    }

    func send(_ text: String) throws {
        try #require(trySend(text))
    }

    /// False when the connection no longer takes it (the server closed it).
    func trySend(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Bytes that have arrived; empty when none, nil at the end of the stream. Never blocks:
    /// the server's tasks share the test's few cooperative threads.
    private func receive() -> [UInt8]? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) == 1 else { return [] }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(chunk[..<count]) : nil
    }

    /// The next response, within 40 s.
    func response() async throws -> Answer {
        let deadline = Date().addingTimeInterval(40)
        while true {
            if let answer = parse() { return answer }
            guard Date() < deadline else { throw POSIXError(.ETIMEDOUT) }
            guard let bytes = receive() else { throw POSIXError(.ECONNRESET) }
            buffered += bytes
            if bytes.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        }
    }

    /// True when no response bytes are waiting (after 50 ms).
    func nothingYet() async throws -> Bool {
        try await Task.sleep(for: .milliseconds(50))
        guard let bytes = receive() else { return false }
        buffered += bytes
        return buffered.isEmpty
    }

    /// True when the server closes the connection within `seconds`.
    func closedByServer(within seconds: Int = 5) async throws -> Bool {
        for _ in 0..<(seconds * 20) {
            try await Task.sleep(for: .milliseconds(50))
            guard let bytes = receive() else { return true }
            buffered += bytes
        }
        return false
    }

    private func parse() -> Answer? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, buffered.count - 3)).first(where: { Array(buffered[$0..<$0 + 4]) == separator }) else { return nil }
        let lines = String(decoding: buffered[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard buffered.count >= end + 4 + length else { return nil }
        let text = String(decoding: buffered[(end + 4)..<(end + 4 + length)], as: UTF8.self)
        buffered.removeFirst(end + 4 + length)
        return Answer(status: status, headers: headers, text: text)
    }
}
