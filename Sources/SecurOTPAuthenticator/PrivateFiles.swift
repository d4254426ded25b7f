import Glibc
import SecurOTPCore
import SecurOTPStore

/// The store belongs to one user: its directory and files are owned by the user running the
/// authenticator, reachable by nobody else (directory 0700, files 0600 or stricter) and never
/// symbolic links. Stricter than the system store's rules (FileSecurity), which also accept
/// root-owned files and a group-readable directory.
enum PrivateFiles {
    enum Kind { case directory, file }

    /// Refuses what another user could read, write or swap; `.missing` when absent.
    static func check(_ path: String, _ kind: Kind) throws(AuthenticatorError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { throw AuthenticatorError(.missing, "\(path) does not exist") }
            throw AuthenticatorError(.system, "\(path): \(String(cString: strerror(errno)))")
        }
        let type = info.st_mode & S_IFMT
        if type == S_IFLNK {
            throw AuthenticatorError(.permissions, "\(path) is a symbolic link; the authenticator uses only a real \(kind == .directory ? "directory" : "file") there (remove the link)")
        }
        switch kind {
        case .directory where type != S_IFDIR: throw AuthenticatorError(.invalidInput, "\(path) is not a directory")
        case .file where type != S_IFREG: throw AuthenticatorError(.invalidInput, "\(path) is not a regular file")
        default: break
        }
        let me = geteuid()
        guard info.st_uid == me else {
            throw AuthenticatorError(.permissions, "\(path) is owned by uid \(info.st_uid), not by you (uid \(me)); "
                + "the authenticator opens only a store of your own (give another one with --data-dir DIR)")
        }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 {
            let fix = kind == .directory ? "chmod 700 \(path)" : "chmod 600 \(path)"
            throw AuthenticatorError(.permissions, "\(path) is accessible by other users (mode \(octal(mode))); fix: \(fix)")
        }
    }

    /// mkdir -p: directories it makes get mode 0700; the last one must then pass `check`.
    static func makeDirectory(_ path: String) throws(AuthenticatorError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw AuthenticatorError(.system, "cannot create directory \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        try check(path, .directory)
    }

    /// Reads a small private file through one O_NOFOLLOW descriptor (FileSecurity.contents),
    /// after the owner and mode checks above.
    static func contents(of path: String, maxSize: Int) throws(AuthenticatorError) -> [UInt8] {
        try check(path, .file)
        return try translating { () throws(StoreError) in try FileSecurity.contents(of: path, .secret, maxSize: maxSize) }
    }

    /// Writes a new 0600 file atomically (temp file, fsync, rename).
    static func write(_ path: String, _ secret: SecretBytes, replace: Bool) throws(AuthenticatorError) {
        try translating { () throws(StoreError) in
            try secret.withUnsafeBytes { (bytes) throws(StoreError) in try FileSecurity.writeSecret(path, bytes: bytes, replace: replace) }
        }
    }

    /// Overwrites a file's bytes with zeros in place and syncs them, before it is removed. On
    /// copy-on-write file systems and flash the old blocks may survive; this is best effort.
    static func overwriteWithZeros(_ path: String) {
        let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        let zeros = [UInt8](repeating: 0, count: 4096)
        var left = Int(info.st_size)
        while left > 0 {
            let n = zeros.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, min(left, $0.count)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            left -= n
        }
        fsync(fd)
    }

    static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}
