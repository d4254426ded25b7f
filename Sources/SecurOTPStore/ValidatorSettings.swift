import SecurOTPCore

/// The module's remote mode: `validator=` names a securotpd that decides every login instead
/// of the local store (docs/design.md, "Where a verification goes"). Without `validator=`, the
/// module works locally and the other keys here must not be set.
public struct ValidatorSettings: Sendable, Equatable {
    public var address: ValidatorAddress?
    /// The host credential file (`securotp host add NAME --output FILE`): root-owned, 0600.
    public var hostCredential: String?
    /// PEM CA bundle that signed the validator's certificate (default: the system's).
    public var caFile: String?
    /// Mutual TLS: this host's certificate and key (both or neither).
    public var clientCertificate: String?
    public var clientKey: String?
    /// Seconds each request to the validator may take, connection included.
    public var timeout = 10
    public var failMode = FailMode.secure
    /// Where offline codes the validator hands this host are kept, one owner-only file per
    /// user (`offline_cache=`; default: /var/lib/securotp/offline, or state_dir/offline).
    public var offlineCache: String?
    /// Push approval (docs/push.md): how long the module waits for the user's device after
    /// the empty answer that says "I approved" (`push_timeout=`, seconds).
    public var pushTimeout = 60
    /// `device_ca=`: a PEM P-256 public key; only approvals from device keys it certified for
    /// the user and device are accepted (a compromised validator can then only deny).
    public var deviceCA: String?
    /// `device_uv=required`: only approvals that say the device checked its user (its PIN).
    public var deviceUserVerification = DeviceUserVerification.optional
    /// `device_revoked=`: the admin's list of device ids whose approvals (and certificates)
    /// this host refuses, one per line; root-owned, not writable by others, read at each push.
    public var deviceRevoked: String?
    /// `device_cert_expiry=required`: with `device_ca=`, a certificate without an expiry
    /// (made before certificates expired) is refused; `optional` (the default) takes it with a
    /// logged warning.
    public var deviceCertificateExpiry = DeviceCertificateExpiry.optional
    /// `push_offline=allow|deny` (docs/push.md, "Offline approval"); unset: deny with
    /// `device_ca=` (its owner does not trust the validator to approve), allow without.
    public var pushOffline: Bool?

    /// Whether the push prompt may offer an offline challenge.
    public var offersOfflineApproval: Bool { pushOffline ?? (deviceCA == nil) }
    /// `push_web=allow|deny` (docs/push.md, "Phones without an app"); unset: deny with
    /// `device_ca=`. The validator serves the page a passkey signs in, so it could have the
    /// passkey sign a login's challenge in a sign-in's guise: a host that does not trust the
    /// validator to approve must not take passkey approvals, certificate or not.
    public var pushWeb: Bool?

    /// Whether phones' passkey approvals (`FFFF#0002`) are taken.
    public var acceptsWebApprovals: Bool { pushWeb ?? (deviceCA == nil) }
    /// `validator_may=` (docs/configuration.md, "What the host takes on the validator's word"):
    /// `approve` (the default) takes passcodes, remote FIDO and offline codes on the validator's
    /// word; `deny-only` offers only what this host verifies itself — push approvals under
    /// `device_ca=` — so that a compromised validator can deny a login but never approve one.
    public var validatorMay = ValidatorMay.approve

    /// `web_origin=`: phones' passkeys (`FFFF#0002`) are accepted only when they signed at this
    /// origin (the validator's public_url); unset, at the origin the approval names.
    public var webOrigin: String?

    public static let timeoutRange = 1...60
    public static let pushTimeoutRange = 5...300

    public init() {}

    /// Remote mode is on.
    public var isEnabled: Bool { address != nil }

    /// Checks that the keys make one usable whole.
    public func validate() throws(StoreError) {
        guard address != nil else {
            let set: [(String, String?)] = [("host_credential", hostCredential), ("ca_file", caFile), ("client_cert", clientCertificate), ("client_key", clientKey),
                         ("offline_cache", offlineCache), ("device_ca", deviceCA), ("web_origin", webOrigin),
                         ("push_timeout", pushTimeout == Self().pushTimeout ? nil : "\(pushTimeout)"),
                         ("device_uv", deviceUserVerification == .optional ? nil : deviceUserVerification.rawValue),
                         ("device_revoked", deviceRevoked),
                         ("device_cert_expiry", deviceCertificateExpiry == .optional ? nil : deviceCertificateExpiry.rawValue),
                         ("push_offline", pushOffline.map { $0 ? "allow" : "deny" }), ("push_web", pushWeb.map { $0 ? "allow" : "deny" }),
                         ("validator_may", validatorMay == .approve ? nil : validatorMay.rawValue)]
            let stray = set.filter { $0.1 != nil }.map { $0.0 }
            if let key = stray.first {
                throw StoreError(.config, "\(key) is set but validator is not; set validator=https://HOST:PORT or remove \(key)")
            }
            return
        }
        if hostCredential == nil {
            throw StoreError(.config, "validator needs host_credential=FILE (made with: securotp host add NAME --output FILE on the validator)")
        }
        if (clientCertificate == nil) != (clientKey == nil) {
            throw StoreError(.config, "client_cert and client_key go together; set both or neither")
        }
        if validatorMay == .denyOnly {
            // Without device_ca the device's key is the validator's word too; offline and passkey
            // approvals are checked by the validator (or signed on its page).
            guard deviceCA != nil else {
                throw StoreError(.config, "validator_may=deny-only needs device_ca=FILE: without it every approval is the validator's word")
            }
            if pushOffline == true || pushWeb == true {
                throw StoreError(.config, "validator_may=deny-only cannot go with push_offline=allow or push_web=allow: those approvals are the validator's word")
            }
        }
    }
}

/// What the module takes on the validator's word (`validator_may=`).
public enum ValidatorMay: String, Sendable, Equatable {
    /// The validator's accept of a passcode, a remote FIDO assertion and its offline codes log
    /// a user in; push approvals are checked here (under `device_ca=`, against its certificate).
    case approve
    /// Only methods this host verifies itself: push approvals under `device_ca=`. Passcodes,
    /// offline codes and remote FIDO are refused (never sent); the validator can only deny.
    case denyOnly = "deny-only"

    /// Whether `method` can be offered: the host checks a push approval itself; passcodes and
    /// remote FIDO are the validator's decision.
    public func allows(_ method: LoginMethod) -> Bool {
        self == .approve || method == .push
    }
}

/// Whether an approval must say that the device verified its user (WebAuthn's UV flag: the
/// device PIN was checked for this answer).
public enum DeviceUserVerification: String, Sendable, Equatable {
    case optional
    case required
}

/// Whether a device certificate must carry an expiry (docs/push.md, "Device certificates").
public enum DeviceCertificateExpiry: String, Sendable, Equatable {
    /// Certificates without one (version 1) are taken, with a logged warning.
    case optional
    /// Certificates without one are refused (`certificate_no_expiry`).
    case required
}

/// What happens when the validator cannot be asked (down, timed out, TLS refused, answer
/// unreadable). A credential the validator refuses is never a reason to fail open.
public enum FailMode: String, Sendable, Equatable {
    /// Deny with PAM_AUTHINFO_UNAVAIL.
    case secure
    /// PAM_IGNORE: the rest of the stack decides, without a second factor. Whoever can cut the
    /// host off from the validator can then skip the code.
    case safe
}

/// Where the validator listens: `https://HOST[:PORT]`, `http://` on loopback only (127.0.0.0/8,
/// ::1, localhost), or `unix:/PATH`.
public enum ValidatorAddress: Sendable, Equatable, CustomStringConvertible {
    case https(host: String, port: Int)
    case http(host: String, port: Int)
    case unix(path: String)

    public init?(parsing text: String) {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard path.hasPrefix("/"), path.utf8.count < 108, !path.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f }) else { return nil }
            self = .unix(path: path)
            return
        }
        let secure = text.hasPrefix("https://")
        guard secure || text.hasPrefix("http://") else { return nil }
        var rest = Substring(text.dropFirst(secure ? 8 : 7))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let target = Self.hostAndPort(rest, defaultPort: secure ? 443 : 80) else { return nil }
        if secure {
            self = .https(host: target.host, port: target.port)
        } else {
            guard LoopbackHost.contains(target.host) else { return nil }
            self = .http(host: target.host, port: target.port)
        }
    }

    /// `name`, `1.2.3.4` or `[v6]`, then an optional `:port`; nothing else (no user info,
    /// path or query).
    private static func hostAndPort(_ text: Substring, defaultPort: Int) -> (host: String, port: Int)? {
        var host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[...close]
            let inside = text[text.index(after: text.startIndex)..<close]
            guard !inside.isEmpty, inside.utf8.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return nil }
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else {
            if let colon = text.firstIndex(of: ":") {
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            } else {
                host = text
            }
            guard !host.isEmpty, host.utf8.count <= 253, host.utf8.allSatisfy(isNameCharacter) else { return nil }
        }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let number = Int(portText), (1...65535).contains(number) else { return nil }
            port = number
        }
        return (String(host), port)
    }

    /// Host names: letters, digits, dots and hyphens (IDN names in their ASCII form).
    private static func isNameCharacter(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a)
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46)
    }


    /// What libcurl (CHTTP) is asked for `path` (an `APIPath` template).
    public func url(_ path: String) -> String {
        switch self {
        case .https(let host, let port): "https://\(host):\(port)\(path)"
        case .http(let host, let port): "http://\(host):\(port)\(path)"
        case .unix(let socket): "unix:\(socket) \(path)"
        }
    }

    public var description: String {
        switch self {
        case .https(let host, let port): "https://\(host):\(port)"
        case .http(let host, let port): "http://\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }
}
