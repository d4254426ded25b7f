import CPosix

/// FIDO security keys in local mode (docs/fido.md): the RP ID credentials are made for and
/// checked against, and the text that asks for a touch.
public struct FidoSettings: Sendable, Equatable {
    /// pam_u2f's `origin=`; empty: `pam://HOSTNAME`, as pamu2fcfg and pam_u2f default.
    public var origin = ""
    /// pam_u2f's cue text (1.1.0), shown once a key holding the user's credential is found.
    public var cuePrompt = "Please touch the device."

    public init() {}

    /// `origin`, or pam://HOSTNAME.
    public var effectiveOrigin: String {
        if !origin.isEmpty { return origin }
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, 255) == 0 else { return "pam://localhost" }
        return "pam://" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An RP ID: printable ASCII without spaces, commas or colons after the scheme, 1–255 bytes.
    public static func validOrigin(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 255 && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ",") }
    }
}
