/// The most a host request (the PAM module to securotpd's host routes) may carry: far above
/// any real one (a user name, a passcode, a report of offline codes, the user's groups), far
/// below anything that costs memory or disk. securotpd refuses a larger body (413, BodyLimit)
/// and the module measures its preflight against it before sending (RemoteVerification), so
/// both read this one number.
public enum HostRequestLimit {
    public static let bytes = 64 * 1024
}
