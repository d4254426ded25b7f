/// An admin's certification that a public key belongs to one user's device (docs/push.md,
/// "Device certificates"): an ES256 signature by the CA key, standard base64 (RFC 4648 §4,
/// padded) of the DER signature.
///
/// - version 2, `v2:EXPIRES:SIGNATURE`: the signature over `"securotp-device-cert-v2" ||
///   field(user) || field(device) || field(base64(spki)) || field(EXPIRES)`, EXPIRES in Unix
///   seconds (decimal): the host refuses it from that second on.
/// - version 1, `SIGNATURE` alone (made before certificates expired): over
///   `"securotp-device-cert-v1" || field(user) || field(device) || field(base64(spki))`; it
///   never expires, which a host takes with a logged warning or refuses
///   (`device_cert_expiry=required`).
///
/// A host with `device_ca=` accepts an approval only from a key certified for the login's user
/// and device, not expired, and not on its `device_revoked=` list.
public enum DeviceCertificate {
    static let domain = Array("securotp-device-cert-v1".utf8)
    static let domainV2 = Array("securotp-device-cert-v2".utf8)
    static let prefixV2 = Array("v2:".utf8)
    /// A PEM public key file is a few hundred bytes; anything much larger is not one.
    public static let maxPEMLength = 8192
    /// The longest certificate text: `v2:`, 11 digits, `:`, base64 of a 72-byte signature.
    public static let maxLength = 128
    /// Expiries up to the year 5000: more digits are not a time.
    public static let latestExpiry: Int64 = 95_617_584_000

    /// Version 1's signed text (no expiry).
    public static func statement(user: String, device: String, publicKey: [UInt8]) -> [UInt8] {
        var out = domain
        PushStatement.appendField(user, to: &out)
        PushStatement.appendField(device, to: &out)
        PushStatement.appendField(Base64.encode(publicKey, .standard), to: &out)
        return out
    }

    /// Version 2's signed text: version 1's fields and the expiry.
    public static func statement(user: String, device: String, publicKey: [UInt8], expires: Int64) -> [UInt8] {
        var out = domainV2
        PushStatement.appendField(user, to: &out)
        PushStatement.appendField(device, to: &out)
        PushStatement.appendField(Base64.encode(publicKey, .standard), to: &out)
        PushStatement.appendField(String(expires), to: &out)
        return out
    }

    /// A version 2 certificate's text from the CA's DER signature over `statement(…, expires:)`.
    public static func text(signature: [UInt8], expires: Int64) -> String {
        "v2:" + String(expires) + ":" + Base64.encode(signature, .standard)
    }

    /// A certificate's parts: the DER signature and, for version 2, the expiry. Nil when the
    /// text is neither form.
    public static func parse(_ certificate: String) -> (signature: [UInt8], expires: Int64?)? {
        let bytes = Array(certificate.utf8)
        guard !bytes.isEmpty, bytes.count <= maxLength else { return nil }
        var expires: Int64?
        var body = bytes[...]
        if bytes.starts(with: prefixV2) {
            let rest = bytes[prefixV2.count...]
            guard let colon = rest.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let digits = rest[rest.startIndex..<colon]
            guard (1...11).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.first != 0x30 else { return nil }
            var value: Int64 = 0
            for digit in digits { value = value * 10 + Int64(digit - 0x30) }  // at most 11 digits: no overflow
            guard value <= latestExpiry else { return nil }
            expires = value
            body = rest[(colon + 1)...]
        }
        guard let signature = Base64.decode(Array(body), .standard), (8...ApprovalAssertion.maxSignatureLength).contains(signature.count)
        else { return nil }
        return (signature, expires)
    }

    /// What a host makes of a certificate at `now` (Unix seconds).
    public enum Check: Equatable, Sendable {
        /// The CA's signature over this user, device and key; `expires` nil for version 1.
        case valid(expires: Int64?)
        /// Version 2, valid but past its expiry.
        case expired(Int64)
        /// Unreadable, or not the CA's signature over this user, device and key (and expiry).
        case invalid
    }

    /// Checks `certificate` against the CA's key (`caPublicKey`, SPKI DER; see
    /// `publicKey(pem:)`) for this user, device and key, at `now`.
    public static func check(certificate: String, user: String, device: String, publicKey: [UInt8], caPublicKey: [UInt8],
                             now: Int64) -> Check {
        guard let parsed = parse(certificate) else { return .invalid }
        let (signature, expires) = (parsed.signature, parsed.expires)
        let message = expires.map { statement(user: user, device: device, publicKey: publicKey, expires: $0) }
            ?? statement(user: user, device: device, publicKey: publicKey)
        guard ApprovalAssertion.es256Verify(publicKey: caPublicKey, message: message, signature: signature) else { return .invalid }
        if let expires, now >= expires { return .expired(expires) }
        return .valid(expires: expires)
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
