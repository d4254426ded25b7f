import Glibc

extension CommandContext {
    /// The login behind sudo, else the effective user.
    static func invokingUser() -> String {
        if let sudoUser = getenv("SUDO_USER") { return String(cString: sudoUser) }
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "root" }
        return String(cString: name)
    }
}
