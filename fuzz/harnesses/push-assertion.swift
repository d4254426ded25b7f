// ApprovalAssertion.verify (SecurOTPCore: the PAM module checks every push approval with it):
// authenticator data, client data JSON, DER signature and SPKI public key, all outside bytes.
//
// Input: a flags byte (bit 0: require user verification; bit 1: the key comes from the input,
// else the test vectors' device key), then big-endian 16-bit lengths and the bytes of
// authenticator data, client data JSON, signature (and the key).
//
// Properties: the same answer twice; an accepted approval has the user-present flag (and UV
// when required), the counter of its authenticator data, a client data whose type, origin and
// challenge are the expected ones by a second reading (JSONReader), and a signature that
// verifies over authenticatorData || SHA-256(clientDataJSON); changing one signed byte (the
// counter's last) makes it refused.
import FuzzSupport
@testable import SecurOTPCore

/// From Tests/Vectors/push.json (challenge_hex, and the cases' public key).
let expectedChallenge = Fuzz.bytes(fromHex: "72c30c4245f90c1d47842ae9d6fdeb0f0fce5a0ea5b950bb01db829dcf3a9798")
let fullVectorKey = Base64.decode("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEp2Qv34WKHC-VPryAj79BpWnctkAbDwyak623_dgbfKlDDAto9BoE3hLZY38NyymH1JckuzZ91cIuaHOQsZgx5A", .url) ?? []
let expectedType = "securotp.push.approve"
let expectedOrigin = "securotp:push"
let expectedRPID = "securotp-push"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPushAssertion(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(Fuzz.bytes(data, size))
    let flags = input.byte()
    let requireUV = flags & 1 == 1
    let authenticatorData = input.bytes(Int(input.uint16()) % 512)
    let clientDataJSON = input.bytes(Int(input.uint16()) % 8192)
    let signature = input.bytes(Int(input.uint16()) % 256)
    let publicKey = flags & 2 == 2 ? input.bytes(Int(input.uint16()) % 512) : fullVectorKey
    func verify(_ authenticatorData: [UInt8]) -> ApprovalResult {
        ApprovalAssertion.verify(authenticatorData: authenticatorData, clientDataJSON: clientDataJSON, signature: signature,
                                 publicKey: publicKey, expectedChallenge: expectedChallenge, expectedType: expectedType,
                                 expectedOrigin: expectedOrigin, expectedRPID: expectedRPID, requireUserVerification: requireUV)
    }
    let result = verify(authenticatorData)
    Fuzz.require(verify(authenticatorData) == result, "two answers for one input")
    guard case .accepted(let counter, let userVerified) = result else { return 0 }
    Fuzz.require(authenticatorData.count == 37 && authenticatorData[32] & 1 == 1, "accepted without user presence")
    Fuzz.require(userVerified == (authenticatorData[32] & 4 == 4) && (userVerified || !requireUV), "UV flag misread")
    Fuzz.require(counter == UInt32(authenticatorData[33]) << 24 | UInt32(authenticatorData[34]) << 16
                 | UInt32(authenticatorData[35]) << 8 | UInt32(authenticatorData[36]), "counter misread")
    Fuzz.require(ConstantTime.equal(Array(authenticatorData[0..<32]), PushStatement.sha256(Array(expectedRPID.utf8))), "wrong rp id accepted")
    let clientData = JSONReader.parse(clientDataJSON)
    Fuzz.require(clientData?["type"]?.string == expectedType && clientData?["origin"]?.string == expectedOrigin,
                 "accepted client data \(Fuzz.printable(String(decoding: clientDataJSON, as: UTF8.self)))")
    Fuzz.require(clientData?["challenge"]?.string.flatMap { Base64.decode($0, .url) } == expectedChallenge, "accepted another challenge")
    Fuzz.require(ApprovalAssertion.es256Verify(publicKey: publicKey, message: authenticatorData + PushStatement.sha256(clientDataJSON),
                                               signature: signature), "accepted a signature that does not verify")
    var changed = authenticatorData
    changed[36] ^= 1
    if case .accepted = verify(changed) { Fuzz.require(false, "accepted with a changed counter") }
    return 0
}
