import SecurOTPCore

/// The check of a passkey's registration (`navigator.credentials.create`), docs/push.md
/// "Phones without an app": client data (type `webauthn.create`, the stored challenge, the
/// validator's origin, not cross-origin), then the attestation object — CBOR `{fmt, attStmt,
/// authData}`, the statement ignored (we ask for `none`) — and its authenticator data: RP id
/// hash, UP, UV and AT set, the credential id as the page sent it, a COSE EC2 P-256 ES256 key.
/// Pure and trap-free: every byte comes from a browser.
public enum WebAuthnRegistration {
    public static let createType = "webauthn.create"
    /// WebAuthn §5.8.6: credential ids are at most 1023 bytes.
    public static let maxCredentialIDLength = 1023
    public static let maxAttestationObjectLength = 16 * 1024

    public struct Credential: Sendable, Equatable {
        public var credentialID: [UInt8]
        /// The 91-byte SPKI every ES256 check takes (P256PublicKey).
        public var publicKey: [UInt8]
        public var aaguid: [UInt8]
        public var counter: UInt32
    }

    public enum Refusal: String, Sendable, Equatable, Error {
        case malformed
        case badClientData = "bad_client_data"
        case wrongType = "wrong_type"
        case wrongChallenge = "wrong_challenge"
        case wrongOrigin = "wrong_origin"
        case badAttestation = "bad_attestation"
        case wrongRPID = "wrong_rp_id"
        case notPresent = "not_present"
        case notVerified = "not_verified"
        case noCredential = "no_credential"
        case wrongCredentialID = "wrong_credential_id"
        /// Not an EC2 P-256 key for ES256 (alg -7).
        case unsupportedKey = "unsupported_key"

        public var code: String { rawValue }
    }

    public static func verify(clientDataJSON: [UInt8], attestationObject: [UInt8], credentialID: [UInt8],
                              expectedChallenge: [UInt8], expectedOrigin: String, expectedRPID: String) -> Result<Credential, Refusal> {
        guard !clientDataJSON.isEmpty, clientDataJSON.count <= ApprovalAssertion.maxClientDataLength,
              !attestationObject.isEmpty, attestationObject.count <= maxAttestationObjectLength,
              !credentialID.isEmpty, credentialID.count <= maxCredentialIDLength, !expectedChallenge.isEmpty
        else { return .failure(.malformed) }
        guard let clientData = ClientData.parse(clientDataJSON) else { return .failure(.badClientData) }
        guard clientData.type == createType else { return .failure(.wrongType) }
        guard clientData.challenge.count == expectedChallenge.count, ConstantTime.equal(clientData.challenge, expectedChallenge)
        else { return .failure(.wrongChallenge) }
        guard clientData.origin == expectedOrigin else { return .failure(.wrongOrigin) }

        guard let object = CBORReader.decodeAll(attestationObject), object["fmt"]?.text != nil,
              case .map = object["attStmt"] ?? .null, let authData = object["authData"]?.bytes
        else { return .failure(.badAttestation) }
        return parseAuthenticatorData(authData, credentialID: credentialID, expectedRPID: expectedRPID)
    }

    /// rpIdHash(32) flags(1) signCount(4) aaguid(16) credentialIdLength(2) credentialId COSE_Key [extensions].
    static func parseAuthenticatorData(_ data: [UInt8], credentialID: [UInt8], expectedRPID: String) -> Result<Credential, Refusal> {
        guard let head = AuthenticatorData(data) else { return .failure(.badAttestation) }
        guard head.isFor(rpID: expectedRPID) else { return .failure(.wrongRPID) }
        guard head.userPresent else { return .failure(.notPresent) }
        guard head.userVerified else { return .failure(.notVerified) }
        guard head.hasAttestedCredential else { return .failure(.noCredential) }
        guard data.count >= 55 else { return .failure(.badAttestation) }
        let aaguid = Array(data[37..<53])
        let idLength = Int(data[53]) << 8 | Int(data[54])
        guard idLength >= 1, idLength <= maxCredentialIDLength, data.count - 55 > idLength else { return .failure(.badAttestation) }
        let id = Array(data[55..<(55 + idLength)])
        guard id.count == credentialID.count, ConstantTime.equal(id, credentialID) else { return .failure(.wrongCredentialID) }
        var reader = CBORReader(data, offset: 55 + idLength)
        guard let key = reader.read() else { return .failure(.badAttestation) }
        if head.hasExtensions {
            guard case .map = reader.read() ?? .null else { return .failure(.badAttestation) }
        }
        guard reader.offset == data.count else { return .failure(.badAttestation) }
        guard let publicKey = es256PublicKey(key) else { return .failure(.unsupportedKey) }
        return .success(Credential(credentialID: id, publicKey: publicKey, aaguid: aaguid, counter: head.counter))
    }

    /// COSE_Key {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y} → SPKI.
    public static func es256PublicKey(_ key: CBOR) -> [UInt8]? {
        guard case .map(let members) = key, members.count <= 8,
              key[label: 1]?.integer == 2, key[label: 3]?.integer == -7, key[label: -1]?.integer == 1,
              let x = key[label: -2]?.bytes, let y = key[label: -3]?.bytes, x.count == 32, y.count == 32
        else { return nil }
        let spki = P256PublicKey.spki(point: x + y)
        return P256PublicKey.isSPKI(spki) ? spki : nil
    }
}
