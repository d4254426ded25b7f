import CSystem

/// Group names of a user through NSS (getpwnam_r + getgrouplist + getgrgid_r), so LDAP and
/// SSSD users are resolved like local ones.
enum UnixGroups {
    /// Nil when the user cannot be resolved; the caller then fails closed.
    static func names(of user: String) -> [String]? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(user, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        let primary = entry.pw_gid

        var count: Int32 = 32
        var ids = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(user, primary, &ids, &count) < 0 {
            guard count > Int32(ids.count), count <= 65_536 else { return nil }
            ids = [gid_t](repeating: 0, count: Int(count))
        }
        var names: [String] = []
        var groupBuffer = [CChar](repeating: 0, count: 16_384)
        for id in ids.prefix(Int(max(0, count))) {
            var entry = CSystem.group()
            var found: UnsafeMutablePointer<CSystem.group>?
            if getgrgid_r(id, &entry, &groupBuffer, groupBuffer.count, &found) == 0, found != nil, let name = entry.gr_name {
                names.append(String(cString: name))
            }
        }
        return names
    }
}
