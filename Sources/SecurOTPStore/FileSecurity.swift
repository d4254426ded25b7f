import CPosix

/// Device, inode, size and change time: equal identities mean the same, unchanged file.
public struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var changed: Int64
    var changedNanoseconds: Int64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        changed = Int64(info.st_ctim.tv_sec)
        changedNanoseconds = Int64(info.st_ctim.tv_nsec)
    }
}

/// Paranoid file handling for everything that holds secrets or policy: absolute paths, no
/// symlinks, owned by root (or the user running securotp), not writable — and for secrets not
/// readable — by anyone else. Every refusal names the file and the fix.
public enum FileSecurity {
    public enum Sensitivity {
        /// Database and key file: owner-only (mode 0600 or stricter).
        case secret
        /// PAM service files and sshd_config (checked by doctor): never group/world-writable.
        case policy
    }

    /// Checks an existing file (or directory) and returns what identifies its current version.
    @discardableResult
    public static func check(_ path: String, _ sensitivity: Sensitivity, isDirectory: Bool = false) throws(StoreError) -> FileIdentity {
        guard path.hasPrefix("/") else {
            throw StoreError(.invalidInput, "\(path): use an absolute path")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if securotp_errno() == ENOENT { throw StoreError(.missing, "\(path) does not exist") }
            throw StoreError(.system, "\(path): \(String(cString: strerror(securotp_errno())))")
        }
        let type = securotp_file_type(info.st_mode)
        if type == mode_t(S_IFLNK) { throw StoreError(.permissions, "\(path) is a symbolic link; point securotp at the real file") }
        if isDirectory, type != mode_t(S_IFDIR) { throw StoreError(.invalidInput, "\(path) is not a directory") }
        if !isDirectory, type != mode_t(S_IFREG) { throw StoreError(.invalidInput, "\(path) is not a regular file") }
        try checkOwner(path, info)
        let mode = info.st_mode & 0o777
        let forbidden: mode_t = switch (sensitivity, isDirectory) {
        case (_, true): 0o022          // nobody else may add, remove or rename files in it
        case (.secret, false): 0o077
        case (.policy, false): 0o022
        }
        if mode & forbidden != 0 {
            let fix = isDirectory ? "chmod go-w \(path)" : (sensitivity == .secret ? "chmod 600 \(path)" : "chmod go-w \(path)")
            let what = sensitivity == .secret && !isDirectory ? "readable or writable" : "writable"
            throw StoreError(.permissions, "\(path) is \(what) by other users (mode \(octal(mode))); fix: \(fix)")
        }
        return FileIdentity(info)
    }

    /// Checks a program securotp runs (`push_hook_command`): the file as `.policy` (a regular
    /// file, no symlink, owned by root or the caller, writable by nobody else), executable, and
    /// every directory on its path from `/` down — each a real directory owned by root or the
    /// caller and not group/world-writable (a sticky bit does not make one safe) — so that nobody
    /// else can replace the file or a directory above it between two runs. Callers check before
    /// every run, not once: a check at start-up says nothing of the file run later.
    public static func checkProgram(_ path: String) throws(StoreError) {
        try checkDirectories(above: path)
        try check(path, .policy)
        guard access(path, X_OK) == 0 else { throw StoreError(.permissions, "\(path) is not executable; fix: chmod 755 \(path)") }
    }

    /// Every directory above `path`, from `/` to its parent, as written and as the kernel
    /// resolves it: each a directory owned by root or the caller and not writable by group or
    /// others. A symbolic link on the way (Debian's `/bin` → `usr/bin`) is followed when it is
    /// owned by root or the caller (only whoever may write its directory, checked too, could
    /// change it), and the directories it leads to are checked as well. `path` must be
    /// absolute and plain (no `.`, `..` or empty component).
    public static func checkDirectories(above path: String) throws(StoreError) {
        try checkDirectories(of: path, path: path, allowLinks: true)
        guard let resolved = realpath(path, nil) else {
            throw StoreError(.system, "\(path): \(String(cString: strerror(securotp_errno())))")
        }
        defer { free(resolved) }
        let real = String(cString: resolved)
        if real != path { try checkDirectories(of: real, path: path, allowLinks: false) }
    }

    private static func checkDirectories(of file: String, path: String, allowLinks: Bool) throws(StoreError) {
        guard file.hasPrefix("/") else { throw StoreError(.invalidInput, "\(path): use an absolute path") }
        let components = file.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        guard !components.isEmpty, components.allSatisfy({ !$0.isEmpty && !$0.elementsEqual(".".utf8) && !$0.elementsEqual("..".utf8) }) else {
            throw StoreError(.invalidInput, "\(path): use a plain absolute path (no //, . or .. in it)")
        }
        var directories = ["/"]
        var prefix = ""
        for part in components.dropLast() {
            prefix += "/" + String(decoding: part, as: UTF8.self)
            directories.append(prefix)
        }
        for directory in directories {
            var info = stat()
            guard lstat(directory, &info) == 0 else {
                throw StoreError(.system, "\(directory): \(String(cString: strerror(securotp_errno())))")
            }
            let type = securotp_file_type(info.st_mode)
            guard info.st_uid == 0 || info.st_uid == geteuid() else {
                throw StoreError(.permissions, "\(directory) (above \(path)) is owned by uid \(info.st_uid), who could replace what is in it; fix: chown root: \(directory)")
            }
            if type == mode_t(S_IFLNK), allowLinks { continue }
            guard type == mode_t(S_IFDIR) else {
                throw StoreError(.permissions, "\(directory) (above \(path)) is not a directory")
            }
            if info.st_mode & 0o022 != 0 {
                throw StoreError(.permissions, "\(directory) (above \(path)) is writable by other users (mode \(octal(info.st_mode & 0o7777))), who could replace what is in it; fix: chmod go-w \(directory), or move the file")
            }
        }
    }

    /// Reads a whole small file after the checks above, through one descriptor opened with
    /// O_NOFOLLOW so the checked file is the read file.
    public static func contents(of path: String, _ sensitivity: Sensitivity, maxSize: Int) throws(StoreError) -> [UInt8] {
        let checked = try check(path, sensitivity)
        let fd = securotp_open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0)
        guard fd >= 0 else { throw StoreError(.system, "cannot open \(path): \(String(cString: strerror(securotp_errno())))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError(.system, "cannot stat \(path)") }
        // The file opened must be the file checked (not one swapped in between).
        guard FileIdentity(info) == checked else { throw StoreError(.permissions, "\(path) changed while it was being read; try again") }
        guard Int(info.st_size) <= maxSize else { throw StoreError(.invalidInput, "\(path) is larger than \(maxSize) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress.map { $0 + done }, $0.count - done) }
            if n < 0, securotp_errno() == EINTR { continue }
            guard n > 0 else { throw StoreError(.system, "cannot read \(path)") }
            done += n
        }
        return bytes
    }

    /// Writes a new owner-only file atomically: temp file, fsync, rename, fsync the directory.
    /// Refuses to replace an existing file unless `replace` is set.
    public static func writeSecret(_ path: String, bytes: UnsafeBufferPointer<UInt8>, replace: Bool) throws(StoreError) {
        if !replace, access(path, F_OK) == 0 { throw StoreError(.invalidInput, "\(path) already exists; refusing to overwrite it") }
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = securotp_open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError(.system, "cannot create \(temporary): \(String(cString: strerror(securotp_errno())))") }
        var done = 0
        while done < bytes.count {
            let n = write(fd, bytes.baseAddress.map { $0 + done }, bytes.count - done)
            if n < 0, securotp_errno() == EINTR { continue }
            guard n > 0 else {
                close(fd)
                unlink(temporary)
                throw StoreError(.system, "cannot write \(temporary): \(String(cString: strerror(securotp_errno())))")
            }
            done += n
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw StoreError(.system, "cannot write \(path): \(String(cString: strerror(securotp_errno())))")
        }
        syncDirectory(of: path)
    }

    /// Creates a directory owned by the caller with mode 0700 (or checks an existing one).
    public static func makePrivateDirectory(_ path: String) throws(StoreError) {
        if mkdir(path, 0o700) != 0, securotp_errno() != EEXIST {
            throw StoreError(.system, "cannot create directory \(path): \(String(cString: strerror(securotp_errno())))")
        }
        try check(path, .secret, isDirectory: true)
    }

    static func syncDirectory(of path: String) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        let fd = securotp_open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }

    private static func checkOwner(_ path: String, _ info: stat) throws(StoreError) {
        let me = geteuid()
        guard info.st_uid == 0 || info.st_uid == me else {
            throw StoreError(.permissions, "\(path) is owned by uid \(info.st_uid), not root; fix: chown root: \(path)")
        }
    }

    static func octal(_ mode: mode_t) -> String {
        var digits = ""
        var value = mode
        repeat {
            digits = String(value % 8) + digits
            value /= 8
        } while value > 0
        return "0" + digits
    }
}
