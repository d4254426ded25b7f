// CBORReader and WebAuthnRegistration (SecurOTPService/Push): how the validator reads a
// phone's passkey registration (docs/push.md "Phones without an app"), fed by any browser.
//
// Properties: the reader accepts only canonical CBOR, so an encoder written here writes every
// accepted item back to exactly the input bytes; depth and size limits hold. A registration
// built around the fuzzed bytes as authenticator data is accepted only when its RP id hash,
// flags, credential id and COSE key are what a check written here says, and the key it yields
// is the SPKI of the point at its place in the input.
import FuzzSupport
import SecurOTPCore
@testable import WebAuthnParsing

let origin = "https://otp.example.com"
let rpID = "otp.example.com"
let challenge = [UInt8](repeating: 0x5a, count: 32)
let clientData = Array(#"{"type":"webauthn.create","challenge":"WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo","origin":"https://otp.example.com"}"#.utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebAuthn(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.bytes(data, size)
    checkReader(input)
    checkRegistration(input)
    return 0
}

private func checkReader(_ input: [UInt8]) {
    guard let value = CBORReader.decodeAll(input) else { return }
    Fuzz.require(encode(value) == input, "accepted non-canonical CBOR: \(Fuzz.hex(input.prefix(200)))")
    Fuzz.require(depth(value) <= CBORReader.maxDepth + 1, "nesting \(depth(value)) deep")
}

private func head(_ major: UInt8, _ value: UInt64) -> [UInt8] {
    switch value {
    case 0..<24: return [major << 5 | UInt8(value)]
    case 24..<0x100: return [major << 5 | 24, UInt8(value)]
    case 0x100..<0x1_0000: return [major << 5 | 25] + (0..<2).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xff) }
    case 0x1_0000..<0x1_0000_0000: return [major << 5 | 26] + (0..<4).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xff) }
    default: return [major << 5 | 27] + (0..<8).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xff) }
    }
}

private func encode(_ value: CBOR) -> [UInt8] {
    switch value {
    case .unsigned(let n): return head(0, n)
    case .negative(let n): return head(1, n)
    case .bytes(let b): return head(2, UInt64(b.count)) + b
    case .text(let t): return head(3, UInt64(t.utf8.count)) + Array(t.utf8)
    case .array(let items): return head(4, UInt64(items.count)) + items.flatMap(encode)
    case .map(let members): return head(5, UInt64(members.count)) + members.flatMap { encode($0.0) + encode($0.1) }
    case .bool(let flag): return [flag ? 0xf5 : 0xf4]
    case .null: return [0xf6]
    }
}

private func depth(_ value: CBOR) -> Int {
    switch value {
    case .array(let items): return 1 + (items.map(depth).max() ?? 0)
    case .map(let members): return 1 + (members.map { max(depth($0.0), depth($0.1)) }.max() ?? 0)
    default: return 1
    }
}

/// The fuzzed bytes as authData, in a well-formed attestation object with good client data.
private func checkRegistration(_ authData: [UInt8]) {
    let object = head(5, 3) + encode(.text("fmt")) + encode(.text("none")) + encode(.text("attStmt")) + head(5, 0)
        + encode(.text("authData")) + encode(.bytes(authData))
    let claimedID = authData.count >= 55 ? Array(authData.dropFirst(55).prefix(Int(authData[53]) << 8 | Int(authData[54]))) : [1]
    let result = WebAuthnRegistration.verify(clientDataJSON: clientData, attestationObject: object, credentialID: claimedID.isEmpty ? [1] : claimedID,
                                             expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpID)
    guard case .success(let credential) = result else { return }
    Fuzz.require(Array(authData.prefix(32)) == PushStatement.sha256(Array(rpID.utf8)), "accepted another RP id's hash")
    Fuzz.require(authData[32] & 0x45 == 0x45, "accepted flags \(authData[32])")
    Fuzz.require(credential.credentialID == claimedID && (1...1023).contains(claimedID.count), "credential id")
    Fuzz.require(P256PublicKey.isSPKI(credential.publicKey), "not an SPKI")
    // x and y are byte strings somewhere after the credential id, in that key's COSE map.
    let point = Array(credential.publicKey.suffix(64))
    let rest = Array(authData.dropFirst(55 + claimedID.count))
    let x = [0x58, 0x20] + Array(point[0..<32])
    let y = [0x58, 0x20] + Array(point[32..<64])
    Fuzz.require(contains(rest, x) && contains(rest, y), "the key is not the one in the input")
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    for start in 0...(haystack.count - needle.count) where Array(haystack[start..<(start + needle.count)]) == needle { return true }
    return false
}
