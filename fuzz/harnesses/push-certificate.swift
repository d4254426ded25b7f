// DeviceCertificate (SecurOTPCore: the PAM module's `device_ca=`): the CA key file
// (`publicKey(pem:)`, PEM or DER) and the certificate check.
//
// Input: a mode byte; 0: the bytes are a CA key file, checked against the test vectors'
// certificate; 1: the bytes are a certificate text for the vectors' CA, user, device and key.
//
// Properties: a PEM file gives exactly the base64 body between its markers (decoded by the
// strict decoder), DER comes back as it is, anything over 8 KiB nothing; a certificate verifies
// only if its decoded signature verifies over the statement (checked a second way), and never
// for another user or device.
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
        if let key { _ = DeviceCertificate.verify(certificate: "MEUCIQ==", user: user, device: device, publicKey: devicePublicKey, caPublicKey: key) }
        return 0
    }
    guard let caKey = DeviceCertificate.publicKey(pem: caPEM) else { Fuzz.require(false, "the vectors' CA key does not read"); return 0 }
    let certificate = String(decoding: bytes, as: UTF8.self)
    let valid = DeviceCertificate.verify(certificate: certificate, user: user, device: device, publicKey: devicePublicKey, caPublicKey: caKey)
    guard valid else { return 0 }
    let signature = Base64.decode(certificate, .standard) ?? []
    Fuzz.require(Base64.encode(signature, .standard) == certificate, "accepted a non-canonical certificate text")
    Fuzz.require(ApprovalAssertion.es256Verify(publicKey: caKey, message: DeviceCertificate.statement(user: user, device: device, publicKey: devicePublicKey),
                                               signature: signature), "accepted a signature that does not verify")
    Fuzz.require(!DeviceCertificate.verify(certificate: certificate, user: user + "x", device: device, publicKey: devicePublicKey, caPublicKey: caKey),
                 "a certificate for another user")
    Fuzz.require(!DeviceCertificate.verify(certificate: certificate, user: user, device: device + "0", publicKey: devicePublicKey, caPublicKey: caKey),
                 "a certificate for another device")
    return 0
}
