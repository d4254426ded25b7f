import Glibc

/// Secrets and confirmations from the user: the terminal with echo off, or a line of standard
/// input when it is not a terminal (scripts, tests).
public enum Terminal {
    public static var isInteractive: Bool { isatty(0) == 1 }

    /// One line, without its newline; echo is off while a terminal reads it. The caller wipes it.
    public static func secretLine(prompt: String, what: String) throws -> [UInt8] {
        let terminal = isInteractive
        var saved = termios()
        if terminal {
            // Echo off before the prompt: whatever is typed once the prompt shows stays hidden.
            tcgetattr(0, &saved)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSANOW, &quiet)
            standardError(prompt)
        }
        defer {
            if terminal {
                tcsetattr(0, TCSANOW, &saved)
                standardError("\n")
            }
        }
        guard let line = try readLine(fd: 0, what: what) else {
            throw CLIError(.invalidInput, "no \(what) on standard input")
        }
        return line
    }

    /// The first line of a file (a PIN or password file).
    public static func firstLine(of path: String, what: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(.inputUnreadable, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard let line = try readLine(fd: fd, what: what) else { throw CLIError(.invalidInput, "\(path) is empty; it should hold the \(what)") }
        return line
    }

    /// A question answered on the terminal; true only for "yes".
    public static func confirm(_ question: String) throws -> Bool {
        standardError(question)
        var answer = try readLine(fd: 0, what: "answer") ?? []
        defer { for index in answer.indices { answer[index] = 0 } }
        return String(decoding: answer, as: UTF8.self).lowercased() == "yes"
    }

    /// Reads byte by byte up to a newline, so nothing after it is consumed; nil at once-EOF.
    private static func readLine(fd: Int32, what: String) throws -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        var sawAnything = false
        while true {
            let n = read(fd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            guard n == 1 else { break }
            sawAnything = true
            if byte == 10 { return line }
            if byte != 13 { line.append(byte) }
            guard line.count <= 1024 else {
                for index in line.indices { line[index] = 0 }
                throw CLIError(.invalidInput, "the \(what) line is too long")
            }
        }
        return sawAnything ? line : nil
    }
}

/// Zeroes a secret line (PIN, password) and drops it.
public func wipe(_ bytes: inout [UInt8]?) {
    guard var value = bytes else { return }
    for index in value.indices { value[index] = 0 }
    bytes = nil
}
