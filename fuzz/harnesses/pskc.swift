// PSKC key containers (RFC 6030; PSKCImporter, PSKCXML and PSKCKeyring in SecurOTPImport),
// through Foundation's XMLParser. The harness holds the password and the pre-shared transport
// key of the test vectors (Tests/Vectors/pskc/pskc.json), so the PBKDF2, AES-CBC + HMAC and
// key-unwrap paths are reached for every mutation of an encrypted file.
//
// Properties: every token is a usable OATH token (a 1–256 byte secret, 6–8 digits, a period
// of 1–300 s), not expired at the harness's "now"; an expiry date reads back from the text
// the importer prints for it.
import FuzzSupport
import SecurOTPCore
@testable import SecurOTPImport

private let now: Int64 = 1_700_000_000
private let options = ImportOptions(password: Array("qwerty".utf8),
                                    transportKey: SecretBytes(copying: Fuzz.bytes(fromHex: "12345678901234567890123456789012")),
                                    now: now)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPSKC(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.bytes(data, size)
    guard PBKDF2Limit.allows(input) else { return 0 }
    guard let tokens = try? PSKCImporter.decode(input, options: options) else { return 0 }
    Fuzz.require(!tokens.isEmpty, "PSKC import succeeded with no token")
    for token in tokens { check(token) }
    return 0
}

private func check(_ token: ImportedToken) {
    guard case .oath(let parameters) = token.kind else { return Fuzz.require(false, "a PSKC token that is not OATH") }
    Fuzz.require(parameters.problem == nil && OTP.periodRange.contains(parameters.period), "PSKC parameters out of range")
    Fuzz.require((1...256).contains(token.secret.count), "PSKC secret of \(token.secret.count) bytes")
    Fuzz.require(token.source == "pskc", "source \(token.source)")
    guard let expires = token.expires else { return }
    Fuzz.require(expires >= now, "expired token imported (expires \(expires))")
    // "YYYY-MM-DD hh:mm:ss UTC" → xs:dateTime → the same second.
    let shown = PSKCDateTime.format(expires)
    let parts = shown.split(separator: " ")
    guard parts.count == 3, parts[0].utf8.count == 10 else { return } // years past 9999 have no xs:dateTime here
    let back = PSKCDateTime.unixTime(parts[0] + "T" + parts[1] + "Z")
    Fuzz.require(back == expires, "expiry \(expires) is shown as \(shown), which reads back as \(back.map(String.init) ?? "nothing")")
}
