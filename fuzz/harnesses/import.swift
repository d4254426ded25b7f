// `securotp import`'s entry point, TokenImporter.parse: format detection (otpauth lines,
// otpauth-migration lines, CTF lines, PSKC or SDTID XML) and the readers behind it, with the
// PSKC vectors' password and transport key and a CTF vector's device ID.
//
// Properties: an import yields at least one usable token of the detected format (XML input
// only PSKC or only SDTID tokens, line input only line formats); nothing imported is expired;
// a refusal never quotes the password or the transport key unless the input itself holds it.
import FuzzSupport
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

private let now: Int64 = 1_700_000_000
private let password = "qwerty"
private let transportKeyHex = "12345678901234567890123456789012"
private let options = ImportOptions(password: Array(password.utf8),
                                    transportKey: SecretBytes(copying: Fuzz.bytes(fromHex: transportKeyHex)),
                                    bindingID: "a01c4380-fc01-4df0-b113-7fb98ec74694", now: now)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzImport(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.bytes(data, size)
    guard PBKDF2Limit.allows(input) else { return 0 }
    let tokens: [ImportedToken]
    do {
        tokens = try TokenImporter.parse(input, options: options)
    } catch {
        Fuzz.require(!error.message.isEmpty, "empty error message")
        let text = String(decoding: input, as: UTF8.self).lowercased()
        for secret in [password, transportKeyHex] where !text.contains(secret) {
            Fuzz.require(!error.message.lowercased().contains(secret), "error message quotes a secret: \(error.message)")
        }
        return 0
    }
    Fuzz.require(!tokens.isEmpty, "an import without tokens")
    let body = input.starts(with: [0xEF, 0xBB, 0xBF]) ? input.dropFirst(3) : input[...]
    let isXML = body.drop { [0x20, 0x09, 0x0A, 0x0D].contains($0) }.first == UInt8(ascii: "<")
    let sources = Set(tokens.map(\.source))
    if isXML {
        Fuzz.require(sources == ["pskc"] || sources == ["sdtid"], "XML imported as \(sources)")
    } else {
        Fuzz.require(sources.isSubset(of: ["otpauth", "otpauth-migration", "ctf"]), "lines imported as \(sources)")
    }
    for token in tokens { check(token) }
    return 0
}

private func check(_ token: ImportedToken) {
    if let expires = token.expires { Fuzz.require(expires >= now, "expired token imported (\(token.source))") }
    switch token.kind {
    case .oath(let parameters):
        Fuzz.require(parameters.problem == nil && token.secret.count > 0, "unusable \(token.source) token")
    case .securID(let parameters):
        Fuzz.require(parameters.problem == nil && token.secret.count == 16 && !parameters.isExpired(at: now),
                     "unusable \(token.source) token")
        Fuzz.require(token.serial.map { $0.utf8.count == 12 } == true, "SecurID serial \(token.serial ?? "nil")")
    }
}
