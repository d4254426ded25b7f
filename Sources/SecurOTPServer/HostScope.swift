import SecurOTPService
import SecurOTPStore

/// Which users a host may verify: the names it was given, or members of its groups (resolved
/// through this machine's NSS, so the validator must see the same directory as the hosts).
/// A host with neither may verify everyone. Outside its scope a host learns no more than
/// from a wrong code (HostRoutes).
enum HostScope {
    static func allows(_ caller: Caller, user: String) -> Bool {
        guard caller.kind == .host else { return true }
        if caller.users.isEmpty && caller.groups.isEmpty { return true }
        if caller.users.contains(user) { return true }
        guard !caller.groups.isEmpty, let rule = GroupRule(parsing: caller.groups.joined(separator: ",")),
              let account = UnixAccount.resolve(user), let groups = account.groupNames() else { return false }
        return !rule.include.isEmpty && rule.covers(groups: groups)
    }
}
