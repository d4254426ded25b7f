import CPosix

/// FIDO security keys in local mode (docs/fido.md): the RP ID credentials are made for and
/// checked against, the text that asks for a touch, and pam_u2f's options with the same
/// meaning (docs/fido.md, "pam_u2f options"), so a pam_u2f line works with the module swapped.
public struct FidoSettings: Sendable, Equatable {
    /// pam_u2f's `origin=`; empty: `pam://HOSTNAME`, as pamu2fcfg and pam_u2f default.
    public var origin = ""
    /// pam_u2f's `appid=`: the RP ID of old U2F-format credentials (`KH,PK` lines); empty: the origin.
    public var appID = ""
    /// pam_u2f's cue text (1.1.0), shown once a key holding the user's credential is found.
    public var cuePrompt = "Please touch the device."
    /// pam_u2f's `cue`: shown by default here; `cue=no` hides it.
    public var cue = true
    /// pam_u2f's `authfile=`: a mapping file read (never written) for credentials besides the store's.
    public var authFile = ""
    /// pam_u2f's `userpresence=`, `userverification=`, `pinverification=`: nil follows each
    /// credential's attributes; true requires, false does not ask.
    public var userPresence: Bool?
    public var userVerification: Bool?
    public var pinVerification: Bool?
    /// pam_u2f's `max_devices=`: at most this many credentials of a user are tried.
    public var maxDevices = 24
    public static let maxDevicesRange = 1...256

    public init() {}

    /// `origin`, or pam://HOSTNAME.
    public var effectiveOrigin: String {
        if !origin.isEmpty { return origin }
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, 255) == 0 else { return "pam://localhost" }
        return "pam://" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `appid`, or the effective origin (pam_u2f's default).
    public var effectiveAppID: String { appID.isEmpty ? effectiveOrigin : appID }

    /// The one rule for which RP ID this host asks its security key for (docs/security.md, "A
    /// security key signs only for this host"), in both modes: for a credential made for this
    /// host's `origin`, or for its `appid` (old U2F-format credentials), this host's own
    /// setting; for a credential made for any other RP ID, nil — it is never asked for, whoever
    /// offers it (the store, a mapping file, a validator).
    public func ownRPID(forCredentialMadeFor rpID: String) -> String? {
        let origin = effectiveOrigin
        if rpID == origin { return origin }
        let appID = effectiveAppID
        return rpID == appID ? appID : nil
    }

    /// An RP ID: printable ASCII without spaces, commas or colons after the scheme, 1–255 bytes.
    public static func validOrigin(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 255 && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ",") }
    }

    /// pam_u2f options this module does not take, with why; refused (never ignored) so a
    /// swapped line does not silently mean less than it says.
    public static func unsupportedPamU2FOption(_ key: String) -> String? {
        switch key {
        case "alwaysok": "pam_u2f's alwaysok (accept everyone) is not supported; remove it"
        case "manual": "pam_u2f's manual mode (pasted assertions) is not supported; remove it"
        case "interactive": "pam_u2f's interactive (press ENTER before the search) is not supported; remove it"
        case "sshformat": "pam_u2f's sshformat is not supported; import the keys with securotp import, or remove it"
        case "expand": "pam_u2f's expand (%u in authfile=) is not supported; use one mapping file for all users"
        case "openasuser": "pam_u2f's openasuser is not supported: the module reads a root-owned authfile= as root"
        case "nodetect": "pam_u2f's nodetect is not supported: the module always finds the key with a silent assertion first"
        case "authpending_file": "pam_u2f's authpending_file= is not supported; remove it"
        case "debug_file": "pam_u2f's debug_file= is not supported: debug goes to syslog; remove it"
        default: nil
        }
    }
}
