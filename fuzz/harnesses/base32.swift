// Base32 (secrets in otpauth URIs and `securotp enroll` output), hex and the otpauth
// percent-coding: SecurOTPCore code that the PAM module links.
//
// Properties: Base32.decode agrees with an independent bit-by-bit decoder written here;
// encode → decode is the identity (any case, with padding, with the spaces and dashes people
// group secrets with); the same for hex and percent-encoding; hash names round-trip.
import FuzzSupport
@testable import SecurOTPCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBase32(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.bytes(data, size)
    checkBase32Decode(input)
    checkBase32RoundTrip(input)
    checkHex(input)
    checkPercentCoding(input)
    checkHashName(String(decoding: input, as: UTF8.self))
    return 0
}

private func checkBase32Decode(_ input: [UInt8]) {
    let decoded = Base32.decode(input).map { secret in secret.withUnsafeBytes { Array($0) } }
    let expected = ReferenceBase32.decode(input)
    Fuzz.require(decoded == expected,
                 "Base32.decode(\(Fuzz.hex(input))) = \(decoded.map(Fuzz.hex) ?? "nil"), reference \(expected.map(Fuzz.hex) ?? "nil")")
}

private func checkBase32RoundTrip(_ bytes: [UInt8]) {
    let secret = SecretBytes(copying: bytes)
    let plain = Base32.encode(secret)
    let padded = Base32.encode(secret, padding: true)
    Fuzz.require(plain.utf8.count == (bytes.count * 8 + 4) / 5, "encoded length \(plain.utf8.count) for \(bytes.count) bytes")
    Fuzz.require(padded.utf8.count % 8 == 0 && padded.hasPrefix(plain), "padded encoding \(padded) of \(plain)")
    let grouped = plain.lowercased().utf8.enumerated().flatMap { index, byte in
        index > 0 && index % 4 == 0 ? [UInt8(ascii: index % 8 == 0 ? "-" : " "), byte] : [byte]
    }
    for variant in [Array(plain.utf8), Array(padded.utf8), grouped] {
        let back = Base32.decode(variant)
        Fuzz.require(back?.constantTimeEquals(secret) == true,
                     "Base32 round trip of \(Fuzz.hex(bytes)) through \"\(String(decoding: variant, as: UTF8.self))\" failed")
    }
}

private func checkHex(_ input: [UInt8]) {
    let encoded = Hex.encode(input)
    Fuzz.require(Hex.decode(encoded) == input, "Hex round trip of \(Fuzz.hex(input)) failed")
    Fuzz.require(Hex.decode(encoded.uppercased()) == input, "Hex round trip (uppercase) of \(Fuzz.hex(input)) failed")
    let text = String(decoding: input, as: UTF8.self)
    if let decoded = Hex.decode(text) {
        Fuzz.require(Hex.encode(decoded) == text.lowercased(), "Hex.decode(\"\(text)\") = \(Fuzz.hex(decoded))")
    } else {
        let digits = text.utf8.allSatisfy { ReferenceBase32.isHexDigit($0) }
        Fuzz.require(!digits || text.utf8.count % 2 == 1, "Hex.decode refused \"\(text)\"")
    }
}

private func checkPercentCoding(_ input: [UInt8]) {
    let text = String(decoding: input, as: UTF8.self)
    let encoded = OTPAuthURI.percentEncode(text)
    Fuzz.require(encoded.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: "&") },
                 "percentEncode left a separator or non-ASCII byte in \(encoded)")
    Fuzz.require(OTPAuthURI.percentDecode(Array(encoded.utf8)) == text, "percent round trip of \"\(text)\" failed")
    if let decoded = OTPAuthURI.percentDecode(input) {
        Fuzz.require(OTPAuthURI.percentDecode(Array(OTPAuthURI.percentEncode(decoded).utf8)) == decoded,
                     "percent re-encoding of \"\(decoded)\" failed")
    }
}

private func checkHashName(_ text: String) {
    for algorithm in HashAlgorithm.allCases {
        Fuzz.require(HashAlgorithm(name: algorithm.name) == algorithm, "HashAlgorithm(name: \(algorithm.name))")
    }
    if let algorithm = HashAlgorithm(name: text) {
        let folded = text.uppercased().filter { $0 != "-" }
        Fuzz.require(folded == algorithm.name, "HashAlgorithm(name: \"\(text)\") = \(algorithm.name)")
    }
}

/// RFC 4648 §6 decoding, one symbol at a time: the oracle for Base32.decode. Spaces, tabs and
/// dashes are skipped, letters of either case accepted, '=' only at the end, and the symbol
/// count must leave fewer than five bits over (no partial byte can need five or more).
enum ReferenceBase32 {
    static func decode(_ text: [UInt8]) -> [UInt8]? {
        var values: [Int] = []
        var padding = false
        for byte in text {
            if byte == 0x20 || byte == 0x09 || byte == UInt8(ascii: "-") { continue }
            if byte == UInt8(ascii: "=") { padding = true; continue }
            guard !padding, let value = value(byte) else { return nil }
            values.append(value)
        }
        guard values.count * 5 % 8 < 5 else { return nil }
        var bits: [Int] = []
        for value in values { for shift in stride(from: 4, through: 0, by: -1) { bits.append(value >> shift & 1) } }
        var out: [UInt8] = []
        for start in stride(from: 0, to: bits.count - 7, by: 8) {
            out.append(UInt8(bits[start..<(start + 8)].reduce(0) { $0 << 1 | $1 }))
        }
        return out
    }

    static func value(_ byte: UInt8) -> Int? {
        let upper = byte >= 0x61 && byte <= 0x7a ? byte - 0x20 : byte
        if upper >= 0x41 && upper <= 0x5a { return Int(upper - 0x41) }
        if upper >= 0x32 && upper <= 0x37 { return Int(upper - 0x32) + 26 }
        return nil
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
