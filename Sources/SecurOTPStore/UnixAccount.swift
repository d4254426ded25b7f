import CPosix

/// The account behind a PAM user name, through NSS (local files, LDAP, SSSD alike).
public struct UnixAccount: Sendable {
    /// NSS's own spelling of the name (`pw_name`): tokens, failures and locks are kept under
    /// it, so `Alice` or `alice@domain` cannot dodge alice's tokens where NSS accepts them.
    public let name: String
    public let primaryGroup: gid_t

    /// Nil when NSS does not know the name or cannot answer (then the caller fails closed).
    public static func resolve(_ user: String) -> UnixAccount? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var size = 4096
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            let rc = getpwnam_r(user, &entry, &buffer, buffer.count, &result)
            if rc == ERANGE {
                size *= 4
                continue
            }
            guard rc == 0, result != nil, let name = entry.pw_name else { return nil }
            return UnixAccount(name: String(cString: name), primaryGroup: entry.pw_gid)
        }
        return nil
    }

    /// The names of all groups of the account, or nil if any lookup fails: a partial answer
    /// (an LDAP server down, a buffer too small) must not make a user look outside `groups=`.
    public func groupNames() -> [String]? {
        var count: Int32 = 64
        var ids = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(name, primaryGroup, &ids, &count) < 0 {
            guard count > Int32(ids.count), count <= 65_536 else { return nil }
            ids = [gid_t](repeating: 0, count: Int(count))
        }
        return Self.groupNames(ids.prefix(Int(max(0, count))), lookup: Self.groupName)
    }

    /// What NSS says of one group ID.
    public enum GroupLookup: Equatable, Sendable {
        case name(String)
        /// No group has this ID (a GID left in /etc/passwd): it has no name, so no policy and
        /// no `groups=` pattern can match it.
        case noEntry
        case failed
    }

    /// The names of `ids`, skipping IDs without a group; nil when any lookup fails.
    public static func groupNames<IDs: Sequence<gid_t>>(_ ids: IDs, lookup: (gid_t) -> GroupLookup) -> [String]? {
        var names: [String] = []
        for id in ids {
            switch lookup(id) {
            case .name(let name): names.append(name)
            case .noEntry: continue
            case .failed: return nil
            }
        }
        return names
    }

    private static func groupName(_ id: gid_t) -> GroupLookup {
        var size = 16_384
        while size <= 1 << 22 {
            var entry = CPosix.group()
            var found: UnsafeMutablePointer<CPosix.group>?
            var buffer = [CChar](repeating: 0, count: size)
            let rc = getgrgid_r(id, &entry, &buffer, buffer.count, &found)
            if rc == ERANGE {
                size *= 4
                continue
            }
            guard rc == 0 else { return .failed }
            // getgrgid_r answers 0 with no entry when no group has the ID.
            guard found != nil else { return .noEntry }
            guard let name = entry.gr_name else { return .failed }
            return .name(String(cString: name))
        }
        return .failed
    }
}
