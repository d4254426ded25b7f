/// The fixed head of WebAuthn authenticator data (§6.1): SHA-256(RP id) ‖ flags ‖
/// uint32_be(signature counter), 37 bytes; attested credential data and extensions follow when
/// the flags say so. The one reader for device approvals, phone passkeys' registrations and
/// sessions, and FIDO keys' assertions. Pure and trap-free: every byte comes from outside.
public struct AuthenticatorData: Sendable, Equatable {
    public static let headLength = 37
    public static let flagUserPresent: UInt8 = 0x01
    public static let flagUserVerified: UInt8 = 0x04
    public static let flagAttestedCredential: UInt8 = 0x40
    public static let flagExtensions: UInt8 = 0x80

    public let rpIDHash: [UInt8]
    public let flags: UInt8
    public let counter: UInt32

    /// nil: shorter than the head.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.headLength else { return nil }
        rpIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        counter = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
    }

    public var userPresent: Bool { flags & Self.flagUserPresent != 0 }
    public var userVerified: Bool { flags & Self.flagUserVerified != 0 }
    public var hasAttestedCredential: Bool { flags & Self.flagAttestedCredential != 0 }
    public var hasExtensions: Bool { flags & Self.flagExtensions != 0 }

    /// Whether the data was made for `rpID` (constant time).
    public func isFor(rpID: String) -> Bool { ConstantTime.equal(rpIDHash, PushStatement.sha256(Array(rpID.utf8))) }

    /// The head a device writes: SHA-256(rp id) ‖ flags (UP, and UV when verified) ‖ counter.
    public static func head(rpID: String, userVerified: Bool, counter: UInt32) -> [UInt8] {
        var out = PushStatement.sha256(Array(rpID.utf8))
        out.append(flagUserPresent | (userVerified ? flagUserVerified : 0))
        out.append(UInt8(truncatingIfNeeded: counter >> 24))
        out.append(UInt8(truncatingIfNeeded: counter >> 16))
        out.append(UInt8(truncatingIfNeeded: counter >> 8))
        out.append(UInt8(truncatingIfNeeded: counter))
        return out
    }
}
