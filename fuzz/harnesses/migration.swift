// Google Authenticator exports, otpauth-migration://offline?data=… (MigrationImport and its
// protobuf reader MigrationWireReader, in SecurOTPImport).
//
// Input: first byte 0 → the rest is the URI text; otherwise the rest is the protobuf payload
// itself (where the fuzzer makes most progress), which the harness also wraps in a URI.
// Properties: every token is usable (a secret, 6 or 8 digits, an account); the payload
// re-encoded by the encoder here decodes to the same accounts; the URI layer (base64,
// percent-escapes, '+' turned into ' ' by form decoding) changes nothing; an account's name and
// issuer come out as the otpauth URI parser reads the same label.
import FuzzSupport
@testable import SecurOTPCore
@testable import SecurOTPImport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMigration(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(Fuzz.bytes(data, size))
    if input.byte() == 0 {
        let text = String(decoding: input.rest(), as: UTF8.self)
        if let tokens = try? MigrationImport.tokens(fromURI: text) { for token in tokens { checkToken(token) } }
        return 0
    }
    let payloadBytes = input.rest()
    guard let payload = try? MigrationImport.decodePayload(payloadBytes) else { return 0 }
    checkReencoding(payload)
    let mapped = payload.entries.map { entry in Result { () throws(ImportError) in try MigrationImport.token(from: entry) } }
    for (entry, result) in zip(payload.entries, mapped) {
        if case .success(let token) = result {
            checkToken(token)
            checkLabel(entry, token)
        }
    }
    checkURIWrapping(payloadBytes, mapped)
    return 0
}

private func checkToken(_ token: ImportedToken) {
    Fuzz.require(token.secret.count > 0, "token without a secret")
    guard case .oath(let parameters) = token.kind else { return Fuzz.require(false, "a migration token that is not OATH") }
    Fuzz.require(parameters.problem == nil && [6, 8].contains(parameters.digits) && parameters.period == 30,
                 "parameters digits \(parameters.digits) period \(parameters.period)")
    Fuzz.require(parameters.counter <= UInt64(Int64.max), "counter \(parameters.counter)")
    Fuzz.require(token.account.map { !$0.isEmpty } == true, "token without an account")
    Fuzz.require(token.issuer.map { !$0.isEmpty } != false, "empty issuer instead of none")
    Fuzz.require(token.source == "otpauth-migration", "source \(token.source)")
}

/// The name is an otpauth label ("issuer:account"): it must split as OTPAuthURI.parse splits it.
private func checkLabel(_ entry: MigrationImport.Entry, _ token: ImportedToken) {
    var uri = "otpauth://totp/" + OTPAuthURI.percentEncode(entry.name) + "?secret=GEZDGNBV"
    if !entry.issuer.isEmpty { uri += "&issuer=" + OTPAuthURI.percentEncode(entry.issuer) }
    guard let parsed = try? OTPAuthURI.parse(uri) else {
        return Fuzz.require(false, "name \"\(entry.name)\" imports, but its otpauth label does not parse")
    }
    Fuzz.require(parsed.account == token.account, "name \"\(entry.name)\": account \(token.account ?? "nil"), otpauth reads \(parsed.account)")
    let issuer = parsed.issuer.flatMap { $0.isEmpty ? nil : $0 }
    Fuzz.require(issuer == token.issuer, "name \"\(entry.name)\": issuer \(token.issuer ?? "nil"), otpauth reads \(issuer ?? "nil")")
}

private func checkReencoding(_ payload: MigrationImport.Payload) {
    let bytes = ProtobufEncoder.encode(payload)
    guard let again = try? MigrationImport.decodePayload(bytes) else {
        return Fuzz.require(false, "re-encoded payload \(Fuzz.hex(bytes)) does not decode")
    }
    Fuzz.require(again.version == payload.version && again.batchSize == payload.batchSize
                 && again.batchIndex == payload.batchIndex && again.batchID == payload.batchID, "batch fields changed")
    Fuzz.require(again.entries.count == payload.entries.count, "entry count changed")
    for (a, b) in zip(payload.entries, again.entries) {
        Fuzz.require(a.name == b.name && a.issuer == b.issuer && a.algorithm == b.algorithm && a.digits == b.digits
                     && a.type == b.type && a.counter == b.counter, "entry \(a.name) changed")
        Fuzz.require(a.secret.map(bytesOf) == b.secret.map(bytesOf), "secret of \(a.name) changed")
    }
}

private func checkURIWrapping(_ payloadBytes: [UInt8], _ mapped: [Result<ImportedToken, ImportError>]) {
    guard !payloadBytes.isEmpty else { return }
    let base64 = Base64Encoder.encode(payloadBytes)
    let spellings = [
        Base64Encoder.percentEscaped(base64),
        base64.replacingPlus(with: " ").replacingSlash(with: "%2F"),
        "x=1&data=" + Base64Encoder.percentEscaped(base64) + "&y",
    ]
    for data in spellings {
        let uri = data.hasPrefix("x=") ? "otpauth-migration://offline?" + data : "otpauth-migration://offline?data=" + data
        let result = Result { () throws(ImportError) in try MigrationImport.tokens(fromURI: uri) }
        switch result {
        case .success(let tokens):
            let expected = mapped.compactMap { try? $0.get() }
            Fuzz.require(!mapped.isEmpty && expected.count == mapped.count && tokens.count == expected.count,
                         "\(uri) imports \(tokens.count) of \(mapped.count) accounts")
            for (a, b) in zip(tokens, expected) {
                Fuzz.require(bytesOf(a.secret) == bytesOf(b.secret) && a.account == b.account && a.issuer == b.issuer,
                             "\(uri) imports another token than its payload")
            }
        case .failure:
            Fuzz.require(mapped.isEmpty || mapped.contains { if case .failure = $0 { true } else { false } },
                         "\(uri) is refused although every account of its payload imports")
        }
    }
}

private func bytesOf(_ secret: SecretBytes) -> [UInt8] { secret.withUnsafeBytes { Array($0) } }

extension String {
    fileprivate func replacingPlus(with replacement: String) -> String {
        var out = ""
        for character in self { if character == "+" { out += replacement } else { out.append(character) } }
        return out
    }

    fileprivate func replacingSlash(with replacement: String) -> String {
        var out = ""
        for character in self { if character == "/" { out += replacement } else { out.append(character) } }
        return out
    }
}

/// The protobuf wire format for MigrationPayload, written from the .proto (see MigrationImport):
/// varints and length-delimited fields, each field once.
enum ProtobufEncoder {
    static func encode(_ payload: MigrationImport.Payload) -> [UInt8] {
        var out: [UInt8] = []
        for entry in payload.entries { lengthDelimited(1, encode(entry), into: &out) }
        varintField(2, payload.version, into: &out)
        varintField(3, payload.batchSize, into: &out)
        varintField(4, payload.batchIndex, into: &out)
        varintField(5, payload.batchID, into: &out)
        return out
    }

    static func encode(_ entry: MigrationImport.Entry) -> [UInt8] {
        var out: [UInt8] = []
        if let secret = entry.secret { lengthDelimited(1, bytesOf(secret), into: &out) }
        lengthDelimited(2, Array(entry.name.utf8), into: &out)
        lengthDelimited(3, Array(entry.issuer.utf8), into: &out)
        varintField(4, entry.algorithm, into: &out)
        varintField(5, entry.digits, into: &out)
        varintField(6, entry.type, into: &out)
        varintField(7, entry.counter, into: &out)
        return out
    }

    static func varintField(_ number: UInt64, _ value: UInt64, into out: inout [UInt8]) {
        varint(number << 3, into: &out)
        varint(value, into: &out)
    }

    static func lengthDelimited(_ number: UInt64, _ bytes: [UInt8], into out: inout [UInt8]) {
        varint(number << 3 | 2, into: &out)
        varint(UInt64(bytes.count), into: &out)
        out += bytes
    }

    static func varint(_ value: UInt64, into out: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            out.append(UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }
}
