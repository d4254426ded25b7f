import SecurOTPCore

/// What a security key signs at a securotp login (docs/fido.md, "What the key signs"), in both
/// modes: its authenticator data and SHA-256 of these client data, which the host builds itself
/// from a challenge and the RP ID it asks its key for —
/// `{"type":"securotp.fido.login","challenge":"<base64url(challenge)>","origin":"<RP ID>"}`.
/// A validator supplies at most the challenge, which is only ever base64url-encoded into it:
/// the key never signs a hash (or an RP ID) someone else chose, so no assertion made here is a
/// WebAuthn assertion for a web site. The validator rebuilds these bytes from the challenge it
/// issued and the RP ID it enrolled the credential for, and takes nothing else.
public enum FidoClientData {
    /// Not `webauthn.get`: no WebAuthn relying party takes it.
    public static let type = "securotp.fido.login"
    /// The challenge's length in bytes (a validator's, or the module's own random one).
    public static let challengeLength = 32
    /// The longest client data a validator takes: an RP ID is at most 255 bytes, each at most
    /// six once escaped, plus the rest.
    public static let maxLength = 2048

    /// The client data for `challenge` at `rpID`, keys in this order, the RP ID escaped as
    /// JSON requires.
    public static func json(challenge: [UInt8], rpID: String) -> [UInt8] {
        let body = JSONWriter.object([(key: "type", value: .text(type)),
                                      (key: "challenge", value: .text(Base64.encode(challenge, .url))),
                                      (key: "origin", value: .text(rpID))])
        return body.withUnsafeBytes { Array($0) }
    }

    /// What the key is given to sign after its authenticator data: SHA-256 of `clientData`.
    public static func hash(_ clientData: [UInt8]) -> [UInt8] {
        PushStatement.sha256(clientData)
    }
}
