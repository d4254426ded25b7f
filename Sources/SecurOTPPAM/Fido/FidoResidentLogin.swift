import CFido2
import SecurOTPCore
import SecurOTPEngine

/// Resident (discoverable) credentials, pamu2fcfg -r's `*` key handle (docs/fido.md): the login
/// names no credential, so the key answers with every credential it holds for the origin —
/// another user's too, when several share the key. The one whose signature verifies with this
/// credential's public key is the user's; it is then checked in full as any other (FidoLogin,
/// or the validator in remote mode).
extension FidoTouch {
    static func residentAssertion(_ credential: FidoCredential, rpID: String, path: [CChar], clientDataHash: [UInt8], up: Int32,
                                  uv: Int32, pin: UnsafeMutablePointer<CChar>?, into chosen: inout securotp_fido_assertion,
                                  error: inout [CChar]) -> Int32 {
        var answers = [securotp_fido_assertion](repeating: securotp_fido_assertion(), count: Int(SECUROTP_FIDO_MAX_RESIDENT))
        var count = 0
        let capacity = answers.count
        let result = rpID.withCString { rpID in
            answers.withUnsafeMutableBufferPointer { buffer in
                securotp_fido_assert_resident(path, rpID, clientDataHash, up, uv, pin, touchTimeoutMilliseconds, buffer.baseAddress,
                                              capacity, &count, &error)
            }
        }
        guard result == Int32(SECUROTP_FIDO_OK), count > 0, count <= capacity else { return result }
        var pick = 0
        for index in 0..<count {
            var answer = answers[index]
            let outcome = FidoAssertionCheck.verify(authenticatorData: bytes(of: &answer.authenticator_data, answer.authenticator_data_length),
                                                    signature: bytes(of: &answer.signature, answer.signature_length),
                                                    clientDataHash: clientDataHash, credential: credential,
                                                    requirePresence: false, requireVerification: false)
            if signatureVerified(outcome) {
                pick = index
                break
            }
        }
        chosen = answers[pick]
        return result
    }

    /// The signature checked out (whatever the flags or the counter say next).
    private static func signatureVerified(_ outcome: FidoAssertionCheck.Outcome) -> Bool {
        switch outcome {
        case .verified, .refused(.presenceMissing), .refused(.verificationMissing), .refused(.counterNotIncreased): true
        default: false
        }
    }

    private static func bytes<T>(of tuple: inout T, _ length: Int) -> [UInt8] {
        withUnsafeBytes(of: &tuple) { Array($0.prefix(min(length, $0.count))) }
    }
}
