import COpenSSL
import SecurOTPCore

/// Why an assertion from a security key was refused (docs/fido.md, "What is verified").
public enum FidoRefusal: Sendable, Equatable {
    case malformed
    /// The authenticator data is for another RP ID (origin).
    case rpIDMismatch
    /// User presence was required and the UP flag is not set.
    case presenceMissing
    /// User verification (UV or PIN) was required and the UV flag is not set.
    case verificationMissing
    case badSignature
    /// This build cannot check signatures of this key type.
    case unsupportedKeyType
    /// A valid signature with a counter that did not increase: the key was cloned.
    case counterNotIncreased(stored: UInt32, received: UInt32)

    public var reason: String {
        switch self {
        case .malformed: "malformed authenticator data"
        case .rpIDMismatch: "the assertion is for another origin (RP ID)"
        case .presenceMissing: "user presence required but not asserted"
        case .verificationMissing: "user verification (UV/PIN) required but not asserted"
        case .badSignature: "the signature does not verify with the enrolled public key"
        case .unsupportedKeyType: "signatures of this key type cannot be checked (es256, eddsa and rs256)"
        case .counterNotIncreased(let stored, let received):
            "signature counter \(received) is not above the stored \(stored): the key was cloned"
        }
    }
}

/// Checks a CTAP2 assertion (authenticatorData || clientDataHash signed by the credential) the
/// way docs/fido.md says: RP ID hash, UP, UV when required, the signature, then the counter.
public enum FidoAssertionCheck {
    public enum Outcome: Sendable, Equatable {
        /// Valid; `counter` is the new signature counter to store.
        case verified(counter: UInt32)
        case refused(FidoRefusal)
    }

    public static func verify(authenticatorData: [UInt8], signature: [UInt8], clientDataHash: [UInt8],
                              credential: FidoCredential, requirePresence: Bool, requireVerification: Bool) -> Outcome {
        guard let head = AuthenticatorData(authenticatorData), clientDataHash.count == 32 else { return .refused(.malformed) }
        guard head.isFor(rpID: credential.origin) else { return .refused(.rpIDMismatch) }

        let message = authenticatorData + clientDataHash
        switch credential.type {
        case .es256 where credential.publicKey.count == 64:
            // The one ES256 verifier (libcrypto's low-level EC path), shared with push approvals.
            guard ApprovalAssertion.es256Verify(publicKey: P256PublicKey.spki(point: credential.publicKey), message: message,
                                                signature: signature) else { return .refused(.badSignature) }
        case .eddsa where credential.publicKey.count == 32:
            guard securotp_ed25519_verify(credential.publicKey, credential.publicKey.count, message, message.count,
                                          signature, signature.count) == 1 else { return .refused(.badSignature) }
        case .rs256 where credential.publicKey.count == Int(SECUROTP_RS256_KEY_LENGTH):
            guard securotp_rs256_verify(credential.publicKey, credential.publicKey.count, message, message.count,
                                        signature, signature.count) == 1 else { return .refused(.badSignature) }
        default:
            return .refused(.unsupportedKeyType)
        }

        if requirePresence, !head.userPresent { return .refused(.presenceMissing) }
        if requireVerification, !head.userVerified { return .refused(.verificationMissing) }
        guard SignatureCounter.accepts(received: head.counter, stored: credential.counter) else {
            return .refused(.counterNotIncreased(stored: credential.counter, received: head.counter))
        }
        return .verified(counter: head.counter)
    }
}
