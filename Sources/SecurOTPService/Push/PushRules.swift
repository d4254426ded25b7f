import COpenSSL
import COpenSSLImport
import Foundation
import SecurOTPCore
import SecurOTPStore

/// Ids, one-time codes, input bounds and the validator's own check of a device's signed answer
/// (docs/push.md). The host checks the same answer itself and never relies on this one.
public enum PushRules {
    // MARK: ids and codes

    /// `dv` + 16 lowercase hex digits; the hex part is also the id of the device's credential.
    public static func newDeviceID() throws(ServiceError) -> String { "dv" + (try randomHex(8)) }
    /// `pr` + 32 lowercase hex digits.
    public static func newRequestID() throws(ServiceError) -> String { "pr" + (try randomHex(16)) }

    public static func randomHex(_ count: Int) throws(ServiceError) -> String {
        try random(count).withUnsafeBytes { Hex.encode($0) }
    }

    /// `count` bytes from the kernel's random source; ids, codes, secrets and challenges all
    /// come from here.
    public static func random(_ count: Int) throws(ServiceError) -> SecretBytes {
        guard let bytes = SecretBytes.random(count: count) else { throw ServiceError(.system, "no randomness available from getrandom(2)") }
        return bytes
    }

    public static func isDeviceID(_ id: String) -> Bool { id.utf8.count == 18 && id.hasPrefix("dv") && isLowerHex(id.utf8.dropFirst(2)) }
    public static func isRequestID(_ id: String) -> Bool { id.utf8.count == 34 && id.hasPrefix("pr") && isLowerHex(id.utf8.dropFirst(2)) }

    private static func isLowerHex(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    static let crockford = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// 16 characters of Crockford base32 (80 bits) in groups of four: `ABCD-EFGH-JKMN-PQRS`.
    public static func newCode() throws(ServiceError) -> String {
        let bytes = try random(16)
        // 16 bytes, 5 bits of each: every character uniform.
        let characters = bytes.withUnsafeBytes { raw in raw.map { crockford[Int($0 & 31)] } }
        var text = ""
        for (index, character) in characters.enumerated() {
            if index > 0, index % 4 == 0 { text += "-" }
            text.append(Character(Unicode.Scalar(character)))
        }
        return text
    }

    /// The code as typed: case, dashes and spaces ignored, I/L read as 1 and O as 0 (Crockford);
    /// nil unless 16 characters of the alphabet.
    public static func normalizedCode(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 64 else { return nil }
        var out: [UInt8] = []
        for byte in text.utf8 where byte != 45 && byte != 32 {
            var upper = (97...122).contains(byte) ? byte - 32 : byte
            if upper == 73 || upper == 76 { upper = 49 }
            if upper == 79 { upper = 48 }
            guard crockford.contains(upper) else { return nil }
            out.append(upper)
        }
        return out.count == 16 ? out : nil
    }

    /// What is stored of an activation or unlock code: HMAC-SHA256 under a domain key of its own
    /// (80 random bits, single-use, minutes long: no slow hash needed).
    public static func codeHash(_ normalized: [UInt8]) -> [UInt8] {
        HMAC.authenticate(.sha256, key: SecretBytes(copying: Array("securotp-device-code-v1".utf8)), message: normalized)
    }

    // MARK: device credentials

    /// `sotp_d_<16 hex>_<64 hex>`: the 16 hex digits are the device id's, so the id finds the row.
    public static func newCredential(deviceID: String) throws(ServiceError) -> Credential {
        let secret = try random(32)
        return Credential(kind: .device, id: String(deviceID.dropFirst(2)), secret: secret.withUnsafeBytes { Array($0) })
    }

    // MARK: input bounds

    public static func number(_ text: String) throws(ServiceError) -> String {
        guard text.utf8.count == 6, text.utf8.allSatisfy({ (48...57).contains($0) }) else {
            throw ServiceError(.invalidInput, "number must be six decimal digits")
        }
        return text
    }

    /// 32 bytes, base64url without padding (43 characters).
    public static func nonce(_ text: String) throws(ServiceError) -> String {
        guard text.utf8.count == 43, let bytes = base64URLDecode(text), bytes.count == 32 else {
            throw ServiceError(.invalidInput, "nonce must be 32 bytes in base64url without padding")
        }
        return text
    }

    /// Login context shown on the device: bounded, valid UTF-8 (the device escapes it for display).
    public static func context(_ text: String?, _ field: String, maxBytes: Int = 256) throws(ServiceError) -> String {
        let text = text ?? ""
        guard text.utf8.count <= maxBytes else { throw ServiceError(.invalidInput, "\(field) longer than \(maxBytes) bytes") }
        return text
    }

    public static func aaid(_ text: String?) throws(ServiceError) -> String {
        let text = text ?? DeviceType.authenticator.aaid
        let bytes = Array(text.utf8)
        let hex: (UInt8) -> Bool = { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
        guard bytes.count == 9, bytes[4] == 35, bytes[0..<4].allSatisfy(hex), bytes[5..<9].allSatisfy(hex) else {
            throw ServiceError(.invalidInput, "aaid must be a FIDO UAF authenticator id VVVV#MMMM (got \(TerminalText.quoted(text)))")
        }
        // An app activates as the authenticator; a phone's passkey comes through the phone page
        // (its own registration). Any other kind could never approve: no host checks it.
        guard DeviceType(aaid: text) == .authenticator else {
            throw ServiceError(.invalidInput, "aaid \(TerminalText.quoted(text)) is not a device this validator can check: an app activates as \(DeviceType.authenticator.aaid) (securotp-authenticator); a phone's passkey enrolls through the phone page (securotp device add --web)")
        }
        return text
    }

    public static func deviceName(_ text: String?) throws(ServiceError) -> String {
        let text = text ?? ""
        guard text.utf8.count <= 64, !text.unicodeScalars.contains(where: { $0.value < 32 || $0.value == 127 }) else {
            throw ServiceError(.invalidInput, "device name: at most 64 bytes, no control characters")
        }
        return text
    }

    public static func binary(_ text: String?, _ field: String, maxBytes: Int) throws(ServiceError) -> [UInt8] {
        guard let text, text.utf8.count <= (maxBytes * 4 + 2) / 3 + 4, let bytes = base64URLDecode(text), !bytes.isEmpty, bytes.count <= maxBytes else {
            throw ServiceError(.invalidInput, "\(field) must be base64url of at most \(maxBytes) bytes")
        }
        return bytes
    }

    // MARK: base64url, the statement: SecurOTPCore/Push's, which hosts and devices use too

    public static func base64URLEncode(_ bytes: [UInt8]) -> String { Base64.encode(bytes, .url) }

    /// base64url without padding, as the API sends binary fields; plain padded base64 too
    /// (certificates are written in it).
    public static func base64URLDecode(_ text: String) -> [UInt8]? { Base64.decode(text, .url) ?? Base64.decode(text, .standard) }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { PushStatement.sha256(bytes) }

    /// docs/push.md, "The signed statement".
    public static func statement(id: String, user: String, host: String, service: String, remoteAddress: String, tty: String, command: String,
                                 nonce: String, number: String, expires: Int64, device: String) -> [UInt8] {
        PushStatement(id: id, user: user, host: host, service: service, remoteAddress: remoteAddress, tty: tty, command: command,
                      nonce: nonce, number: number, expires: String(expires), device: device).bytes
    }

    /// docs/push.md, "Device certificates": what the admin's CA key signed in version 1 (no expiry).
    public static func certificateMessage(user: String, device: String, publicKey spki: [UInt8]) -> [UInt8] {
        DeviceCertificate.statement(user: user, device: device, publicKey: spki)
    }

    /// What the admin's CA key signs (version 2): the certificate ends at `expires` (Unix seconds).
    public static func certificateMessage(user: String, device: String, publicKey spki: [UInt8], expires: Int64) -> [UInt8] {
        DeviceCertificate.statement(user: user, device: device, publicKey: spki, expires: expires)
    }

    /// Whether `text` has a certificate's form (either version), as the validator stores it.
    public static func isCertificate(_ text: String) -> Bool { DeviceCertificate.parse(text) != nil }

    public enum ApprovalCheck: Equatable, Sendable {
        case verified(counter: UInt32, userVerified: Bool)
        case refused(String)
    }

    /// The validator's own check of an approval (the host repeats it): client data, authenticator
    /// data and the ES256 signature over authenticatorData || SHA-256(clientDataJSON), as the
    /// device's kind says (DeviceType). `webOrigin`: where a phone's passkey must have signed
    /// (public_url's origin; PushPolicy.webOrigin).
    public static func checkApproval(statement: [UInt8], publicKey: [UInt8], authenticatorData: [UInt8], clientDataJSON: [UInt8],
                                     signature: [UInt8], requireUserVerification: Bool, deviceType: DeviceType?,
                                     webOrigin: String? = nil) -> ApprovalCheck {
        guard let deviceType else { return .refused("unsupported_authenticator") }
        guard let expected = deviceType.expected(signedAt: webOrigin, requireUserVerification: requireUserVerification) else {
            return .refused(ApprovalRefusal.wrongOrigin.code)
        }
        // The one verifier hosts and devices use too (SecurOTPCore/Push, docs/push.md).
        switch ApprovalAssertion.verify(authenticatorData: authenticatorData, clientDataJSON: clientDataJSON, signature: signature,
                                        publicKey: publicKey, expectedChallenge: sha256(statement), expected: expected) {
        case .accepted(let counter, let userVerified): return .verified(counter: counter, userVerified: userVerified)
        case .refused(.badSignature): return .refused("signature does not verify")
        case .refused(.notVerified): return .refused("user verification (device PIN) required")
        case .refused(let refusal): return .refused(refusal.code)
        }
    }

    /// Whether `spki` is a P-256 public key as the hosts' verifier reads it (docs/push.md).
    public static func isP256PublicKey(_ spki: [UInt8]) -> Bool { P256PublicKey.isSPKI(spki) }

    /// Checks a device certificate (docs/push.md) against a CA public key (PEM) at `now`: valid
    /// and not expired; for tests and `doctor`.
    public static func verifyCertificate(_ certificate: String, caPublicKeyPEM: String, user: String, device: String, publicKey: [UInt8],
                                         now: Int64 = Int64(Date().timeIntervalSince1970)) -> Bool {
        var spki = [UInt8](repeating: 0, count: 512)
        let length = caPublicKeyPEM.withCString { pem in
            spki.withUnsafeMutableBufferPointer { securotp_p256_spki_from_pem(pem, strlen(pem), 0, $0.baseAddress, $0.count) }
        }
        guard length > 0 else { return false }
        switch DeviceCertificate.check(certificate: certificate, user: user, device: device, publicKey: publicKey,
                                       caPublicKey: Array(spki.prefix(length)), now: now) {
        case .valid: return true
        case .expired, .invalid: return false
        }
    }

    /// Signs `message` with a PEM P-256 private key: a DER signature, or nil.
    public static func sign(_ message: [UInt8], privateKeyPEM: String) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 128)
        let length = privateKeyPEM.withCString { pem in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { securotp_es256_sign_pem(pem, strlen(pem), m.baseAddress, m.count, $0.baseAddress, $0.count) }
            }
        }
        return length > 0 ? Array(out.prefix(length)) : nil
    }

    /// A fresh P-256 key pair: (PKCS#8 PEM, SPKI DER). Tests and fixtures.
    public static func generateKeyPair() -> (privateKeyPEM: String, publicKey: [UInt8])? {
        var pem = [CChar](repeating: 0, count: 1024)
        var spki = [UInt8](repeating: 0, count: 256)
        var spkiLength = 0
        let ok = pem.withUnsafeMutableBufferPointer { p in
            spki.withUnsafeMutableBufferPointer { s in securotp_p256_generate(p.baseAddress, p.count, s.baseAddress, s.count, &spkiLength) }
        }
        guard ok == 1 else { return nil }
        return (String(cString: pem), Array(spki.prefix(spkiLength)))
    }
}
