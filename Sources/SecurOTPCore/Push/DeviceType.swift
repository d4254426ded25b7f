/// The kinds of device that approve a login (docs/push.md), by FIDO UAF authenticator id: the
/// one table the host, the validator and the authenticator read. A new kind of device is a new
/// case here; every `switch` over it then says what the new kind needs.
public enum DeviceType: Sendable, Equatable, CaseIterable {
    /// securotp-authenticator: signs a fixed client data at a fixed RP id, user verification as
    /// the host or validator asks, and keeps an offline secret (offline approval).
    case authenticator
    /// A passkey in a phone's browser (the phone page): signs at the page's origin, with its host
    /// name as RP id, always user-verified (the page asks for it); keeps no secret of ours.
    case phonePasskey

    public var aaid: String {
        switch self {
        case .authenticator: return "FFFF#0001"
        case .phonePasskey: return "FFFF#0002"
        }
    }

    /// nil: an aaid no host or validator here can check.
    public init?(aaid: String) {
        switch aaid {
        case "FFFF#0001": self = .authenticator
        case "FFFF#0002": self = .phonePasskey
        default: return nil
        }
    }

    /// Only the authenticator holds a secret it can compute an offline response with.
    public var hasOfflineSecret: Bool { self == .authenticator }

    /// What an approval from this kind of device must say (ApprovalAssertion.verify checks it).
    public struct Expected: Sendable, Equatable {
        public var type: String
        public var origin: String
        public var rpID: String
        public var userVerification: Bool

        public init(type: String, origin: String, rpID: String, userVerification: Bool) {
            self.type = type; self.origin = origin; self.rpID = rpID; self.userVerification = userVerification
        }
    }

    /// `signedAt`: the origin a phone's passkey says it signed at (the checker has already held
    /// it to the origin it trusts); nil or not an origin refuses (nil). `requireUserVerification`:
    /// the checker's own setting, which binds the authenticator only.
    public func expected(signedAt: String?, requireUserVerification: Bool) -> Expected? {
        switch self {
        case .authenticator:
            return Expected(type: ClientData.pushType, origin: ClientData.pushOrigin, rpID: ClientData.pushRPID,
                            userVerification: requireUserVerification)
        case .phonePasskey:
            guard let signedAt, let host = ClientData.webRPID(origin: signedAt) else { return nil }
            return Expected(type: ClientData.webAuthnGetType, origin: signedAt, rpID: host, userVerification: true)
        }
    }
}
