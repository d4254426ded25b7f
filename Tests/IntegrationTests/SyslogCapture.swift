// What the module writes to syslog, for tests: a datagram socket in the sandbox, and pam-check
// run in a private mount namespace (unshare) whose /dev is a fresh tmpfs with /dev/null and
// /dev/log pointing at that socket. Nothing on the machine changes; needs root.
import Foundation
import Glibc
import Testing

final class SyslogCapture {
    /// Root can make mount namespaces here (containers may forbid it).
    static let available: Bool = {
        guard geteuid() == 0, let result = try? Run.run("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/true"]) else { return false }
        return result.status == 0
    }()

    /// Reads the socket on its own thread: a datagram socket's queue is short
    /// (net.unix.max_dgram_qlen, often 10), and a full queue would block the logging process.
    private final class Receiver: @unchecked Sendable {
        let socket: Int32
        private let lock = NSLock()
        private var received: [String] = []
        private var stopped = false
        /// recv timeouts so far: each one means the queue stayed empty for a whole timeout.
        private var emptyPolls = 0

        init(socket: Int32) { self.socket = socket }

        func run() {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !lock.withLock({ stopped }) {
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { // timed out: the queue is empty; look at `stopped` again
                    lock.withLock { emptyPolls += 1 }
                    continue
                }
                let line = String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .newlines)
                lock.withLock { received.append(line) }
            }
            close(socket)
        }

        /// Everything received once the queue has been seen empty after this call began. A
        /// logging process's syslog() has queued its datagram before the process exits, so after
        /// a finished login this is all of its lines, however slowly this thread gets scheduled.
        func take() -> [String] {
            let start = lock.withLock { emptyPolls }
            // The first timeout may have begun before the call; the second began after it.
            var waited = 0
            while lock.withLock({ emptyPolls }) < start + 2 && waited < 500 { // at most 10 s
                usleep(20_000)
                waited += 1
            }
            return lock.withLock {
                defer { received = [] }
                return received
            }
        }

        func stop() { lock.withLock { stopped = true } }
    }

    let path: String
    private let receiver: Receiver

    init(_ box: Sandbox) throws {
        path = box.path("syslog.sock")
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw HarnessError("\(path) is too long for a socket")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        guard bound == 0, setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            close(fd)
            throw HarnessError("bind \(path): \(String(cString: strerror(errno)))")
        }
        receiver = Receiver(socket: fd)
        Thread.detachNewThread { [receiver] in receiver.run() }
    }

    deinit { receiver.stop() }

    /// The lines logged since the last call ("<PRI>timestamp program: module(service:auth): text").
    func lines() -> [String] { receiver.take() }

    /// One pam-check login whose syslog lines land here.
    func login(_ box: Sandbox, _ service: String, _ user: String, _ responses: [String] = []) throws -> ProcessResult {
        let script = """
            mount -t tmpfs -o mode=755 none /dev && mknod -m 666 /dev/null c 1 3 && ln -s "$1" /dev/log && shift && exec "$@"
            """
        return try Run.start("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", path,
                                                  box.pamCheck, "--confdir", box.pamDirectory, service, user] + responses).wait()
    }
}
