import SecurOTPService
import SecurOTPStore

/// Which users a host may verify: the names it was given, or members of its groups (resolved
/// through this machine's NSS, so the validator must see the same directory as the hosts).
/// A host with neither may verify everyone.
enum HostScope {
    static func allows(_ caller: Caller, user: String) -> Bool {
        guard caller.kind == .host else { return true }
        if caller.users.isEmpty && caller.groups.isEmpty { return true }
        if caller.users.contains(user) { return true }
        guard !caller.groups.isEmpty, let rule = GroupRule(parsing: caller.groups.joined(separator: ",")),
              let account = UnixAccount.resolve(user), let groups = account.groupNames() else { return false }
        return !rule.include.isEmpty && rule.covers(groups: groups)
    }

    static func check(_ caller: Caller, user: String) throws(ServiceError) {
        guard allows(caller, user: user) else {
            throw ServiceError(.forbidden, "host \(caller.name) may not verify \(user); see: securotp host list")
        }
    }
}
