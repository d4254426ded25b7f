import CPAM
import CPosix
import COpenSSL
import SecurOTPCore

/// What a push request tells the user's device about the login (docs/push.md, "The signed
/// statement"): the PAM service, the remote address and terminal libpam was given, and for
/// sudo the command line. The same strings go to the validator and into the statement this
/// host rebuilds, so each is cleaned once here: bounded, valid UTF-8, control characters as
/// '?' — the validator relays them unchanged and the device shows them.
struct PushContext: Equatable {
    var service = ""
    var remoteAddress = ""
    var tty = ""
    var command = ""

    /// Byte bounds per field, also in docs/push.md ("The module").
    static let maxService = 64
    static let maxRemoteAddress = 255
    static let maxTTY = 64
    static let maxCommand = 256

    static func of(_ session: PAMSession) -> PushContext {
        func item(_ type: Int32, _ limit: Int) -> String {
            guard let value = session.item(type) else { return "" }
            return cleaned(UnsafeBufferPointer(start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), count: strlen(value)), limit: limit)
        }
        return PushContext(service: item(PAM_SERVICE, maxService), remoteAddress: item(PAM_RHOST, maxRemoteAddress),
                           tty: item(PAM_TTY, maxTTY), command: SudoCommand.current() ?? "")
    }

    /// `bytes` as text for the device: invalid UTF-8 as U+FFFD, control and bidi characters
    /// (TerminalText.isUnsafe) as '?', at most `limit` bytes, cut at a character boundary with
    /// "…" when longer.
    static func cleaned(_ bytes: UnsafeBufferPointer<UInt8>, limit: Int) -> String {
        let decoded = String(decoding: bytes, as: UTF8.self)
        var scalars: [Unicode.Scalar] = []
        for scalar in decoded.unicodeScalars {
            scalars.append(TerminalText.isUnsafe(scalar) ? "?" : scalar)
        }
        var out = String.UnicodeScalarView()
        var length = 0
        let ellipsis: Unicode.Scalar = "…" // 3 bytes in UTF-8
        let total = scalars.reduce(0) { $0 + UTF8.width($1) }
        let budget = total <= limit ? limit : limit - UTF8.width(ellipsis)
        for scalar in scalars {
            let width = UTF8.width(scalar)
            if length + width > budget { break }
            out.append(scalar)
            length += width
        }
        if total > limit { out.append(ellipsis) }
        return String(out)
    }
}

/// The command a sudo run will execute, as far as a PAM module can honestly know it. sudo
/// gives PAM no item for it (it sets PAM_USER, PAM_RUSER, PAM_TTY and, with its `pam_rhost`
/// option, PAM_RHOST to this host's own name; plugins/sudoers/auth/pam.c) and puts SUDO_COMMAND
/// only into the command's environment, after authentication. The module runs inside sudo's
/// own process, though, so /proc/self/cmdline is sudo's argument vector: what the user typed
/// ("sudo -u www systemctl restart nginx"), sudo's options included — not the path sudoers
/// resolved. Only when this process's executable is named sudo.
enum SudoCommand {
    static func current() -> String? {
        guard isSudo() else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = readFile("/proc/self/cmdline", &buffer)
        guard count > 0 else { return nil }
        return buffer.withUnsafeBufferPointer { commandLine(UnsafeBufferPointer(rebasing: $0[..<count])) }
    }

    /// NUL-separated arguments (argv, as /proc/PID/cmdline holds them) as one line: the
    /// program's base name, then the arguments separated by spaces, cleaned and bounded as
    /// every context field is (PushContext.cleaned).
    static func commandLine(_ arguments: UnsafeBufferPointer<UInt8>) -> String {
        var words: [[UInt8]] = [[]]
        for byte in arguments {
            if byte == 0 { words.append([]) } else { words[words.count - 1].append(byte) }
        }
        while let last = words.last, last.isEmpty { words.removeLast() }
        guard var program = words.first else { return "" }
        if let slash = program.lastIndex(of: UInt8(ascii: "/")) { program = Array(program[(slash + 1)...]) }
        var line = program
        for word in words.dropFirst() {
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: word)
        }
        return line.withUnsafeBufferPointer { PushContext.cleaned($0, limit: PushContext.maxCommand) }
    }

    /// Whether /proc/self/exe is a file named sudo (sudoedit is a link to it).
    private static func isSudo() -> Bool {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBufferPointer { out in out.baseAddress.map { readlink("/proc/self/exe", $0, out.count - 1) } ?? -1 }
        guard count > 0, count < buffer.count else { return false }
        let path = buffer[..<count].map { UInt8(bitPattern: $0) }
        let name = path.lastIndex(of: UInt8(ascii: "/")).map { Array(path[($0 + 1)...]) } ?? path
        return name == Array("sudo".utf8)
    }

    /// Up to `buffer.count` bytes of a /proc file; 0 when it cannot be read.
    private static func readFile(_ path: String, _ buffer: inout [UInt8]) -> Int {
        let descriptor = securotp_open(path, O_RDONLY | O_CLOEXEC, 0)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var total = 0
        while total < buffer.count {
            let got = buffer.withUnsafeMutableBufferPointer { read(descriptor, $0.baseAddress.map { $0 + total }, $0.count - total) }
            if got < 0, securotp_errno() == EINTR { continue }
            guard got > 0 else { break }
            total += got
        }
        return total
    }
}

/// This login's secrets for a push: the nonce and the number, from the kernel's random source
/// (docs/push.md, "Words").
struct PushChallenge {
    /// 32 random bytes, base64url without padding (43 characters).
    let nonce: String
    /// Six decimal digits, uniform over 000000–999999.
    let number: String

    /// Nil when the kernel gives no randomness (then no push is offered).
    static func make() -> PushChallenge? {
        var nonce = [UInt8](repeating: 0, count: 32)
        guard nonce.withUnsafeMutableBufferPointer({ $0.baseAddress.map { securotp_random($0, 32) == 1 } ?? false }),
              let number = sixDigits() else { return nil }
        return PushChallenge(nonce: Base64.encode(nonce, .url), number: number)
    }

    /// Rejection sampling: a uniform 32-bit value is used only below the largest multiple of
    /// 10^6 that fits (4,294,000,000), so every number is equally likely.
    static func sixDigits() -> String? {
        for _ in 0..<64 {
            var raw = [UInt8](repeating: 0, count: 4)
            guard raw.withUnsafeMutableBufferPointer({ $0.baseAddress.map { securotp_random($0, 4) == 1 } ?? false }) else { return nil }
            let value = UInt32(raw[0]) << 24 | UInt32(raw[1]) << 16 | UInt32(raw[2]) << 8 | UInt32(raw[3])
            if let number = number(from: value) { return number }
        }
        return nil
    }

    /// The six digits `value` stands for, or nil when it lies in the biased top range.
    static func number(from value: UInt32) -> String? {
        guard value < 4_294_000_000 else { return nil }
        let digits = String(value % 1_000_000)
        return String(repeating: "0", count: 6 - digits.utf8.count) + digits
    }
}
