/// An admin's certification that a public key belongs to one user's device (docs/push.md,
/// "Device certificates"): an ES256 signature by the CA key over
/// `"securotp-device-cert-v1" || field(user) || field(device) || field(base64(spki))`, carried
/// as standard base64 (RFC 4648 §4, padded) of the DER signature. A host with `device_ca=`
/// accepts an approval only from a key certified for the login's user and device.
public enum DeviceCertificate {
    static let domain = Array("securotp-device-cert-v1".utf8)
    /// A PEM public key file is a few hundred bytes; anything much larger is not one.
    public static let maxPEMLength = 8192

    public static func statement(user: String, device: String, publicKey: [UInt8]) -> [UInt8] {
        var out = domain
        PushStatement.appendField(user, to: &out)
        PushStatement.appendField(device, to: &out)
        PushStatement.appendField(Base64.encode(publicKey, .standard), to: &out)
        return out
    }

    /// Whether `certificate` (base64 of a DER signature) is the CA's signature over this user,
    /// device and key. `caPublicKey` is the CA's SPKI DER (see `publicKey(pem:)`).
    public static func verify(certificate: String, user: String, device: String, publicKey: [UInt8],
                              caPublicKey: [UInt8]) -> Bool {
        guard let signature = Base64.decode(certificate, .standard), !signature.isEmpty,
              signature.count <= ApprovalAssertion.maxSignatureLength else { return false }
        return ApprovalAssertion.es256Verify(publicKey: caPublicKey,
                                             message: statement(user: user, device: device, publicKey: publicKey),
                                             signature: signature)
    }

    /// The SPKI DER inside a PEM `PUBLIC KEY` block (RFC 7468: the base64 body may be split
    /// over lines; text before and after the block is ignored), or the bytes themselves when
    /// they are already a DER SubjectPublicKeyInfo (start with SEQUENCE). Nil otherwise. The
    /// key's type is checked when it is used (P-256 only).
    public static func publicKey(pem file: [UInt8]) -> [UInt8]? {
        guard !file.isEmpty, file.count <= maxPEMLength else { return nil }
        if file.first == 0x30 { return file }
        let begin = Array("-----BEGIN PUBLIC KEY-----".utf8)
        let end = Array("-----END PUBLIC KEY-----".utf8)
        guard let start = find(begin, in: file, from: 0), let stop = find(end, in: file, from: start + begin.count)
        else { return nil }
        var body: [UInt8] = []
        for byte in file[(start + begin.count)..<stop] where byte != 0x0a && byte != 0x0d && byte != 0x20 && byte != 0x09 {
            body.append(byte)
        }
        return Base64.decode(body, .standard)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, from >= 0, haystack.count >= needle.count, from <= haystack.count - needle.count
        else { return nil }
        var index = from
        while index <= haystack.count - needle.count {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
