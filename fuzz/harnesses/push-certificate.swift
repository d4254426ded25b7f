// DeviceCertificate (SecurOTPCore: the PAM module's `device_ca=`): the CA key file
// (`publicKey(pem:)`, PEM or DER) and the certificate check.
//
// Input: a mode byte; 0: the bytes are a CA key file, checked against the test vectors'
// certificate; 1: the bytes are a certificate text (version 1, or v2:EXPIRES:SIGNATURE) for the
// vectors' CA, user, device and key.
//
// Properties: a PEM file gives exactly the base64 body between its markers (decoded by the
// strict decoder), DER comes back as it is, anything over 8 KiB nothing; a certificate verifies
// only if its decoded signature verifies over the statement of its version (checked a second
// way), never for another user or device, and a version 2 one is expired from its expiry on.
import FuzzSupport
@testable import SecurOTPCore

/// From Tests/Vectors/push.json "certificates".
let user = "alice"
let device = "dv0123456789abcdef"
let caPEM = Array("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEDhe+xIbh9DuAodhN35vgvvhTUEca\nA266hl6J1ijOcsSnwBZbgxN5GzRRvxBCxE9Wd7bdNLKf3uJdiOsBwAVzVQ==\n-----END PUBLIC KEY-----\n".utf8)
let devicePublicKey = Base64.decode("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEp2Qv34WKHC-VPryAj79BpWnctkAbDwyak623_dgbfKlDDAto9BoE3hLZY38NyymH1JckuzZ91cIuaHOQsZgx5A", .url) ?? []

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPushCertificate(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(Fuzz.bytes(data, size))
    let mode = input.byte() & 1
    let bytes = input.rest()
    if mode == 0 {
        let key = DeviceCertificate.publicKey(pem: bytes)
        if bytes.isEmpty || bytes.count > DeviceCertificate.maxPEMLength {
            Fuzz.require(key == nil, "a key from \(bytes.count) bytes")
        } else if bytes.first == 0x30 {
            Fuzz.require(key == bytes, "DER not returned as it is")
        } else if let key {
            let text = String(decoding: bytes, as: UTF8.self)
            Fuzz.require(text.contains("-----BEGIN PUBLIC KEY-----") && text.contains("-----END PUBLIC KEY-----"), "a key without PEM markers")
            Fuzz.require(Base64.encode(key, .standard).utf8.allSatisfy { bytes.contains($0) }, "key bytes not from the file")
        }
        if let key { _ = DeviceCertificate.check(certificate: "MEUCIQ==", user: user, device: device, publicKey: devicePublicKey, caPublicKey: key, now: 0) }
        return 0
    }
    guard let caKey = DeviceCertificate.publicKey(pem: caPEM) else { Fuzz.require(false, "the vectors' CA key does not read"); return 0 }
    let certificate = String(decoding: bytes, as: UTF8.self)
    func check(_ user: String, _ device: String, now: Int64) -> DeviceCertificate.Check {
        DeviceCertificate.check(certificate: certificate, user: user, device: device, publicKey: devicePublicKey, caPublicKey: caKey, now: now)
    }
    guard case .valid(let expires) = check(user, device, now: 0) else { return 0 }
    guard let parsed = DeviceCertificate.parse(certificate) else { Fuzz.require(false, "a valid certificate that does not parse"); return 0 }
    Fuzz.require(parsed.expires == expires, "the checked expiry is not the parsed one")
    let text = expires.map { DeviceCertificate.text(signature: parsed.signature, expires: $0) } ?? Base64.encode(parsed.signature, .standard)
    Fuzz.require(text == certificate, "accepted a non-canonical certificate text")
    let statement = expires.map { DeviceCertificate.statement(user: user, device: device, publicKey: devicePublicKey, expires: $0) }
        ?? DeviceCertificate.statement(user: user, device: device, publicKey: devicePublicKey)
    Fuzz.require(ApprovalAssertion.es256Verify(publicKey: caKey, message: statement, signature: parsed.signature),
                 "accepted a signature that does not verify")
    Fuzz.require(check(user + "x", device, now: 0) == .invalid, "a certificate for another user")
    Fuzz.require(check(user, device + "0", now: 0) == .invalid, "a certificate for another device")
    if let expires { Fuzz.require(check(user, device, now: expires) == .expired(expires), "a certificate used at its expiry") }
    return 0
}
