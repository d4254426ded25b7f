import COpenSSL

/// The client data a push approval carries (docs/push.md): for `securotp-authenticator` the
/// exact text below, for a browser passkey whatever the browser wrote. Verifiers parse it;
/// only the authenticator writes it.
public enum ClientData {
    public static let pushType = "securotp.push.approve"
    public static let pushOrigin = "securotp:push"
    /// The RP id of securotp-authenticator (DeviceType.authenticator).
    public static let pushRPID = "securotp-push"
    /// Browser passkeys' assertions (issue 16).
    public static let webAuthnGetType = "webauthn.get"

    /// The RP id of a phone's passkey (DeviceType.phonePasskey) from the origin it signed at: its host
    /// name (WebOrigin, the one rule for these origins); nil for anything else (docs/push.md).
    public static func webRPID(origin: String) -> String? { WebOrigin.parse(origin)?.host }

    /// What a verifier reads of client data: its type, challenge (decoded) and origin.
    public struct Parsed: Sendable, Equatable {
        public var type: String
        public var challenge: [UInt8]
        public var origin: String
    }

    /// The one reader of client data, for approvals, registrations and sessions: a JSON object
    /// with string `type`, `challenge` (base64url) and `origin`; nil for anything else, and for
    /// a page embedded in another origin's frame (WebAuthn's `crossOrigin`), which is never ours.
    public static func parse(_ json: [UInt8]) -> Parsed? {
        guard let clientData = JSONReader.parse(json), clientData.isObject,
              let type = clientData["type"]?.string, let challengeText = clientData["challenge"]?.string,
              let origin = clientData["origin"]?.string, let challenge = Base64.decode(challengeText, .url)
        else { return nil }
        if let crossOrigin = clientData["crossOrigin"], crossOrigin != .bool(false) { return nil }
        return Parsed(type: type, challenge: challenge, origin: origin)
    }

    /// `{"type":…,"challenge":"<base64url(challenge)>","origin":…}`, keys in this order.
    /// `type` and `origin` are ours (no characters needing escapes); the challenge is base64url.
    public static func json(type: String, challenge: [UInt8], origin: String) -> [UInt8] {
        var text = "{\"type\":\""
        text += type
        text += "\",\"challenge\":\""
        text += Base64.encode(challenge, .url)
        text += "\",\"origin\":\""
        text += origin
        text += "\"}"
        return Array(text.utf8)
    }
}

/// Why an approval was refused: each is logged and reported to the validator
/// (`POST /v1/push/result` `reason`: see `code`).
public enum ApprovalRefusal: Sendable, Equatable {
    /// An input is empty, too long, or not the shape it must have (authenticator data not 37
    /// bytes, a signature longer than DER allows).
    case malformed
    /// The public key is not a P-256 SubjectPublicKeyInfo.
    case badPublicKey
    /// clientDataJSON is not a JSON object with string `type`, `challenge`, `origin`, or its
    /// challenge is not base64url, or it says it was made cross-origin.
    case badClientData
    case wrongType
    case wrongOrigin
    case wrongChallenge
    /// authenticatorData's RP id hash is not SHA-256 of the expected RP id.
    case wrongRPID
    /// The user-present flag is clear.
    case notPresent
    /// User verification was required and the user-verified flag is clear.
    case notVerified
    case badSignature

    /// snake_case, for logs and the validator.
    public var code: String {
        switch self {
        case .malformed: return "malformed"
        case .badPublicKey: return "bad_public_key"
        case .badClientData: return "bad_client_data"
        case .wrongType: return "wrong_type"
        case .wrongOrigin: return "wrong_origin"
        case .wrongChallenge: return "wrong_challenge"
        case .wrongRPID: return "wrong_rp_id"
        case .notPresent: return "not_present"
        case .notVerified: return "not_verified"
        case .badSignature: return "bad_signature"
        }
    }
}

public enum ApprovalResult: Sendable, Equatable {
    /// The signature counter the authenticator data carries, and whether it says the user was
    /// verified (device PIN, or a passkey's biometrics).
    case accepted(counter: UInt32, userVerified: Bool)
    case refused(ApprovalRefusal)
}

/// The check of one WebAuthn-shaped assertion (ES256), in the order WebAuthn §7.2 gives:
/// client data (type, challenge, origin), authenticator data (RP id hash, UP, UV), then the
/// signature over `authenticatorData || SHA-256(clientDataJSON)`. Pure and trap-free: every
/// input comes from the network.
public enum ApprovalAssertion {
    /// Flags and counter after the 32-byte RP id hash. Extensions (the ED flag) are not
    /// accepted: neither the authenticator nor a passkey's `get` here asks for any.
    public static let authenticatorDataLength = AuthenticatorData.headLength
    public static let maxClientDataLength = 4096
    /// A DER ECDSA-Sig-Value for P-256 is at most 72 bytes.
    public static let maxSignatureLength = 72

    public static func verify(authenticatorData: [UInt8], clientDataJSON: [UInt8], signature: [UInt8],
                              publicKey: [UInt8], expectedChallenge: [UInt8], expectedType: String,
                              expectedOrigin: String, expectedRPID: String,
                              requireUserVerification: Bool) -> ApprovalResult {
        guard authenticatorData.count == authenticatorDataLength, !clientDataJSON.isEmpty,
              clientDataJSON.count <= maxClientDataLength, !signature.isEmpty,
              signature.count <= maxSignatureLength, expectedChallenge.count == 32
        else { return .refused(.malformed) }
        guard publicKey.count == Int(SECUROTP_P256_SPKI_LENGTH) else { return .refused(.badPublicKey) }

        guard let clientData = ClientData.parse(clientDataJSON) else { return .refused(.badClientData) }
        guard clientData.type == expectedType else { return .refused(.wrongType) }
        guard clientData.challenge.count == expectedChallenge.count, ConstantTime.equal(clientData.challenge, expectedChallenge)
        else { return .refused(.wrongChallenge) }
        guard clientData.origin == expectedOrigin else { return .refused(.wrongOrigin) }

        guard let head = AuthenticatorData(authenticatorData) else { return .refused(.malformed) }
        guard head.isFor(rpID: expectedRPID) else { return .refused(.wrongRPID) }
        guard head.userPresent else { return .refused(.notPresent) }
        guard head.userVerified || !requireUserVerification else { return .refused(.notVerified) }

        var signed = authenticatorData
        signed.append(contentsOf: PushStatement.sha256(clientDataJSON))
        guard es256Verify(publicKey: publicKey, message: signed, signature: signature)
        else { return .refused(.badSignature) }
        return .accepted(counter: head.counter, userVerified: head.userVerified)
    }

    /// `expected`: what the device's kind must say (DeviceType.expected).
    public static func verify(authenticatorData: [UInt8], clientDataJSON: [UInt8], signature: [UInt8],
                              publicKey: [UInt8], expectedChallenge: [UInt8], expected: DeviceType.Expected) -> ApprovalResult {
        verify(authenticatorData: authenticatorData, clientDataJSON: clientDataJSON, signature: signature, publicKey: publicKey,
               expectedChallenge: expectedChallenge, expectedType: expected.type, expectedOrigin: expected.origin,
               expectedRPID: expected.rpID, requireUserVerification: expected.userVerification)
    }

    /// ES256 over SHA-256(message), COpenSSL's low-level path (no EVP provider start-up).
    public static func es256Verify(publicKey: [UInt8], message: [UInt8], signature: [UInt8]) -> Bool {
        publicKey.withUnsafeBufferPointer { key in
            message.withUnsafeBufferPointer { text in
                signature.withUnsafeBufferPointer { sig in
                    guard let keyBase = key.baseAddress, let sigBase = sig.baseAddress else { return false }
                    return securotp_es256_verify(keyBase, key.count, text.baseAddress, text.count, sigBase, sig.count) == 1
                }
            }
        }
    }

    /// What the device signs: authenticatorData || SHA-256(clientDataJSON).
    public static func signedBytes(authenticatorData: [UInt8], clientDataJSON: [UInt8]) -> [UInt8] {
        authenticatorData + PushStatement.sha256(clientDataJSON)
    }
}
