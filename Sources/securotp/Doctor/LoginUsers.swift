import Glibc
import SecurOTPCore
import SecurOTPStore

/// The accounts that can log in — a shell that is not nologin, false, sync, halt or shutdown —
/// as NSS lists them (getpwent: local files, and LDAP/SSSD where they enumerate).
enum LoginUsers {
    static let noLoginShells: Set<String> = ["/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false", "/bin/sync",
                                             "/sbin/halt", "/sbin/shutdown", "/usr/sbin/halt", "/usr/sbin/shutdown"]

    static func all() -> [String] {
        var names: [String] = []
        setpwent()
        defer { endpwent() }
        while let entry = getpwent(), names.count < 100_000 {
            guard let name = entry.pointee.pw_name else { continue }
            let shell = entry.pointee.pw_shell.map { String(cString: $0) } ?? ""
            if noLoginShells.contains(shell) { continue }
            let user = String(cString: name)
            if !names.contains(user) { names.append(user) }
        }
        return names
    }

    /// Who a local-mode module line without nullok refuses: users who can log in, whom its
    /// groups= rule covers, and who have no token in its store.
    static func refused(by settings: Settings, users: [String]) throws(StoreError) -> [String] {
        let store = try Store.open(settings.paths, .asIs)
        let withTokens = Set(try store.tokens().map(\.user))
        return users.filter { user in
            guard !withTokens.contains(user) else { return false }
            guard !settings.groups.isEmpty else { return true }
            guard let groups = UnixAccount.resolve(user)?.groupNames() else { return true }
            return settings.groups.covers(groups: groups)
        }
    }

    /// "a, b, c" — at most 20 names, escaped, then how many more.
    static func list(_ users: [String]) -> String {
        let shown = users.prefix(20).map { TerminalText.excerpt($0) }.joined(separator: ", ")
        return users.count > 20 ? "\(shown) and \(users.count - 20) more" : shown
    }
}
