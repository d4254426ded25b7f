// Issue 17 §3: "the daemon restarts on upgrade without dropping a login in flight". There is
// no systemd here; what a restart is made of is tested with the real programs: securotpd on
// SIGTERM stops accepting and finishes the requests it has, and a new securotpd on the same
// port and store answers what comes after. docs/validator.md ("Restarts and upgrades") says
// what the unit does and where a login can still fail.
import Foundation
import Glibc
import Testing

/// One HTTP/1.1 request on its own TCP connection, sent in two parts: the head and half the
/// body first (securotpd has the request in progress), the rest later. A request in flight for
/// as long as the test wants, without touching securotpd or its store.
final class SlowRequest {
    private let fd: Int32
    private let rest: [UInt8]

    init(port: Int, path: String, bearer: String, body: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        guard ValidatorRestartTests.connect(fd, port: port) else {
            close(fd)
            throw HarnessError("connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        let bytes = Array(body.utf8)
        let head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(bearer)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
        let split = bytes.count / 2
        rest = Array(bytes[split...])
        try send(Array(head.utf8) + bytes[..<split])
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw HarnessError("send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Sends the rest and reads the answer to the end: (HTTP status, body); status 0 when the
    /// connection ended without an answer (what a login would see as "validator unavailable").
    func finish() throws -> (status: Int, body: String) {
        defer { close(fd) }
        try? send(rest)
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            answer += buffer[..<count]
        }
        let text = String(decoding: answer, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 "), let status = Int(text.dropFirst(9).prefix(3)) else { return (0, text) }
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, body)
    }
}

@Suite("securotpd restart")
struct ValidatorRestartTests {
    /// How many sockets a process has open (/proc/PID/fd).
    static func sockets(of pid: pid_t) -> Int {
        let directory = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.filter { ((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0)) ?? "").hasPrefix("socket:") }.count
    }

    /// connect(2) to 127.0.0.1:`port`.
    static func connect(_ fd: Int32, port: Int) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return connect(fd, port: port)
    }

    static func waitUntil(_ what: String, timeout: Double = 20, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw HarnessError("timed out waiting until \(what)") }
            usleep(10_000)
        }
    }

    /// Accounts every Debian system has (logins need NSS to know the user).
    static let users = ["root", "daemon", "bin", "sys", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data",
                        "backup", "list", "irc", "nobody"].filter { name in name.withCString { getpwnam($0) } != nil }

    @Test("A burst of verifications in flight at SIGTERM: each ends with its right answer; a new securotpd on the same port and store takes over")
    func burstSurvivesRestart() throws {
        let world = try RemoteWorld()
        var secrets: [String: String] = [:]
        for user in Self.users { secrets[user] = try world.enroll(user, ["--hotp"]).secret }
        // Plain HTTP on loopback, so that the test can hold requests half-sent.
        let settings = ["rate_limit_host": "0"]
        let validator = try Validator(world.box, state: world.validatorState, settings: settings, pki: nil)
        let port = validator.port
        let bearer = try String(contentsOfFile: world.credential, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)

        // The burst: half the users with their right code, half with a wrong one, each request
        // received by securotpd (head and half the body) and waiting for the rest.
        let socketsBefore = Self.sockets(of: validator.child.pid)
        var burst: [(user: String, right: Bool, request: SlowRequest)] = []
        for (index, user) in Self.users.enumerated() {
            let right = index % 2 == 0
            let secret = try #require(secrets[user])
            let code = right ? try Oath.hotp(secret, counter: 0) : try Oath.wrongHOTP(secret)
            burst.append((user, right, try SlowRequest(port: port, path: "/v1/verify", bearer: bearer,
                                                       body: #"{"user":"\#(user)","passcode":"\#(code)"}"#)))
        }
        // Accepted by securotpd, then a moment to read the heads (a connection it has not read
        // from yet is idle, and an idle connection is closed at shutdown).
        try Self.waitUntil("securotpd accepted the burst") { Self.sockets(of: validator.child.pid) >= socketsBefore + burst.count }
        usleep(500_000)

        let terminated = Date()
        kill(validator.child.pid, SIGTERM)
        try Self.waitUntil("securotpd stops accepting") { !Self.accepts(port: port) }
        let closedAfter = Date().timeIntervalSince(terminated)
        #expect(waitpid(validator.child.pid, nil, WNOHANG) == 0, "it waits for the requests in flight")

        // The new securotpd takes the port and the store while the old one still drains.
        let started = Date()
        let successor = try Validator(world.box, state: world.validatorState, settings: settings, pki: nil, listen: "127.0.0.1:\(port)")
        let startup = Date().timeIntervalSince(started)

        for entry in burst {
            let (status, body) = try entry.request.finish()
            #expect(status == 200, "\(entry.user): an answer, not a dropped connection: \(status) \(body)")
            #expect(body.contains(entry.right ? #""result":"accept""# : #""result":"reject""#),
                    "\(entry.user) with the \(entry.right ? "right" : "wrong") code: \(body)")
        }
        let stopped = try validator.child.wait(timeout: 30)
        #expect(stopped.status == 0 && stopped.stderr.contains("securotpd stopped"), "a clean, graceful stop: \(stopped)")
        print("""
            restart: listener closed \(String(format: "%.3f", closedAfter)) s after SIGTERM; the new securotpd listened \
            \(String(format: "%.3f", startup)) s after it was started (old process still draining)
            """)

        // Logins through the module reach the new process, on the same store: the code accepted
        // in the burst is spent, the next one logs in, a wrong one is refused.
        try world.box.service("restart", ["validator=http://127.0.0.1:\(port)", "host_credential=" + world.credential],
                              stateDirectory: world.hostState)
        let user = try #require(Self.users.first)
        let secret = try #require(secrets[user])
        #expect(try world.box.login("restart", user, [try Oath.hotp(secret, counter: 0)]).status == PAM.authError, "replay")
        #expect(try world.box.login("restart", user, [try Oath.hotp(secret, counter: 1)]).status == PAM.success)
        #expect(try world.box.login("restart", user, [try Oath.wrongHOTP(secret)]).status == PAM.authError)
        _ = successor
    }
}

/// A port that refuses connections (bound, not listening: the kernel answers RST, as for a
/// validator between two processes) until `open()`, then forwards each connection to the real
/// validator on `target`. The gap ends exactly when the test says, however slowly this
/// machine starts processes.
final class RestartGap: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let target: Int

    init(forwardingTo target: Int) throws {
        self.target = target
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        guard socketFD >= 0, withUnsafePointer(to: &address, {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }) == 0 else { throw HarnessError("bind: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) } }
        fd = socketFD
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Starts listening and forwarding, as the new validator process would.
    func open() {
        listen(fd, 16)
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                guard ValidatorRestartTests.connect(upstream, port: target) else { close(client); close(upstream); continue }
                Self.pump(from: client, to: upstream)
                Self.pump(from: upstream, to: client)
            }
        }
    }

    private static func pump(from source: Int32, to sink: Int32) {
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                _ = buffer.withUnsafeBytes { send(sink, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
            }
            shutdown(sink, Int32(SHUT_WR))
        }
    }

    deinit { close(fd) }
}

extension ValidatorRestartTests {
    @Test("A login that finds the validator's port closed (a restart's gap) tries to connect again and logs in; one that never sees it open is refused")
    func loginBridgesRestartGap() throws {
        let world = try RemoteWorld()
        let secret = try world.enroll("alice", ["--hotp"]).secret
        let validator = try Validator(world.box, state: world.validatorState, pki: nil)
        let gap = try RestartGap(forwardingTo: validator.port)
        try world.box.service("gap", ["validator=http://127.0.0.1:\(gap.port)", "host_credential=" + world.credential],
                              stateDirectory: world.hostState)

        // Never open: the module tries again, then gives up within its timeout (failmode=secure).
        let refused = try world.box.login("gap", "alice", [try Oath.hotp(secret, counter: 0)])
        #expect(refused.status != PAM.success, "no validator, no login: \(refused)")

        // Open 300 ms after the login started: its first connection is refused, a later one
        // reaches the validator, and the code is checked there.
        let login = try world.box.startLogin("gap", "alice", [try Oath.hotp(secret, counter: 0)])
        usleep(300_000)
        gap.open()
        let result = try login.wait()
        #expect(result.status == PAM.success, "the login gave up instead of trying to connect again: \(result)")
        _ = validator
    }
}
