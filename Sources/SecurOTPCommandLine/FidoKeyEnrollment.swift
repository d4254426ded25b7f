import CFido2
import SecurOTPCore
import SecurOTPEngine

/// A new FIDO credential on the security key attached to this machine (docs/fido.md), made
/// the way pamu2fcfg makes one: 32 random bytes as the client data hash and as the user ID, the
/// RP ID `origin`, the attestation signature checked. Shared by `securotp fido enroll` (the
/// admin's side, which stores it) and `securotp-authenticator fido register` (the user's side,
/// which prints the pam_u2f line an admin imports).
public struct FidoKeyEnrollment {
    public var user: String
    /// The RP ID the login's origin must match (pam://HOSTNAME by default).
    public var origin: String
    public var type: FidoCredential.KeyType = .es256
    /// `+presence`: a touch at every login (pamu2fcfg without -P).
    public var presence = true
    /// `+verification`: the key verifies the user (built-in UV) at every login.
    public var verification = false
    /// A resident (discoverable) credential: kept on the key, `*` as key handle (pamu2fcfg -r).
    public var resident = false
    /// The key's PIN, when it has one (`+pin`: asked at every login too). The caller wipes it.
    public var pin: [UInt8]?

    public init(user: String, origin: String) {
        self.user = user
        self.origin = origin
    }

    /// `--type`: es256, eddsa or rs256.
    public static func keyType(_ text: String) throws -> FidoCredential.KeyType {
        guard let type = FidoCredential.KeyType(rawValue: text) else {
            throw CLIError.usage("--type \(TerminalText.quoted(text)): es256, eddsa or rs256")
        }
        return type
    }

    /// The COSE algorithm libfido2 is asked for.
    static func coseAlgorithm(_ type: FidoCredential.KeyType) -> Int32 {
        switch type {
        case .es256: -7
        case .eddsa: -8
        case .rs256: -257
        }
    }

    /// Asks the key for the credential (the user touches it) and returns it, for `origin`.
    public func make(timeoutMilliseconds: Int32 = 60_000) throws -> FidoCredential {
        guard let challenge = SecretBytes.random(count: 32), let userID = SecretBytes.random(count: 32) else {
            throw CLIError(.system, "no randomness available")
        }
        var made = securotp_fido_credential()
        var error = [CChar](repeating: 0, count: Int(SECUROTP_FIDO_ERROR))
        var pinText: [CChar]? = pin.map { $0.map { CChar(bitPattern: $0) } + [0] }
        defer { pinText?.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        let algorithm = Self.coseAlgorithm(type)
        let result = challenge.withUnsafeBytes { cdh in
            userID.withUnsafeBytes { id in
                origin.withCString { rp in
                    user.withCString { name in
                        withOptionalPointer(pinText) { pinPointer in
                            var request = securotp_fido_credential_request(
                                rp_id: rp, user_name: name, user_id: id.baseAddress, user_id_length: id.count,
                                client_data_hash: cdh.baseAddress, cose_algorithm: algorithm, resident: resident ? 1 : 0,
                                uv: Int32(verification ? SECUROTP_FIDO_TRUE : SECUROTP_FIDO_OMIT), pin: pinPointer)
                            return securotp_fido_make_credential(&request, timeoutMilliseconds, &made, &error)
                        }
                    }
                }
            }
        }
        let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch Int(result) {
        case Int(SECUROTP_FIDO_OK): break
        case Int(SECUROTP_FIDO_PIN_REQUIRED):
            throw CLIError(.fidoPINRequired, "the security key has a PIN: run again with --pin (\(message))")
        case Int(SECUROTP_FIDO_DENIED):
            throw CLIError(.fidoNotTouched, "the security key was not touched; nothing enrolled (\(message))")
        case Int(SECUROTP_FIDO_UNAVAILABLE), Int(SECUROTP_FIDO_NO_DEVICE):
            throw CLIError(.unavailable, "\(message); attach a security key (libfido2-1 must be installed)")
        default:
            throw CLIError(.fidoKeyFailed, "security key: \(message)")
        }
        let handleLength = made.credential_id_length, keyLength = made.public_key_length
        let handle = withUnsafeBytes(of: &made.credential_id) { Array($0.prefix(min(handleLength, $0.count))) }
        let key = withUnsafeBytes(of: &made.public_key) { Array($0.prefix(min(keyLength, $0.count))) }
        // A resident credential is found by the key itself: its line carries `*`, as pamu2fcfg -r prints.
        return FidoCredential(keyHandle: resident ? [] : handle, publicKey: key, type: type, presence: presence,
                              verification: verification, pin: pin != nil, origin: origin)
    }
}

private func withOptionalPointer<R>(_ text: [CChar]?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withUnsafeBufferPointer { body($0.baseAddress) }
}
