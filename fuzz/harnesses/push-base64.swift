// Base64 (SecurOTPCore, push): the strict decoder of the push API's binary fields (standard
// alphabet with padding for device certificates, URL alphabet without for everything else).
//
// Input: a variant byte (bit 0: URL alphabet), then text.
//
// Properties: decoding agrees with a bit-by-bit reference written here that accepts only the
// canonical text; a decoded text is exactly what encoding its bytes gives (one accepted text per
// byte string); encode → decode is the identity for any bytes.
import FuzzSupport
@testable import SecurOTPCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPushBase64(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(Fuzz.bytes(data, size))
    let variant: Base64.Variant = input.byte() & 1 == 1 ? .url : .standard
    let text = input.rest()
    let decoded = Base64.decode(text, variant)
    let expected = ReferenceBase64.decode(text, url: variant == .url)
    Fuzz.require(decoded == expected, "Base64.decode(\(Fuzz.hex(text)), \(variant)) = \(decoded.map(Fuzz.hex) ?? "nil"), reference \(expected.map(Fuzz.hex) ?? "nil")")
    if let decoded { Fuzz.require(Array(Base64.encode(decoded, variant).utf8) == text, "accepted a non-canonical text \(Fuzz.hex(text))") }
    for v in [Base64.Variant.standard, .url] where text.count <= Base64.maxDecodedLength {
        Fuzz.require(Base64.decode(Base64.encode(text, v), v) == text, "round trip of \(Fuzz.hex(text)) in \(v)")
    }
    return 0
}

/// RFC 4648 §4/§5 one symbol at a time, canonical only: standard needs padding to a multiple of
/// four, URL has none; the bits past the last byte must be zero.
enum ReferenceBase64 {
    static func decode(_ text: [UInt8], url: Bool) -> [UInt8]? {
        guard text.count <= Base64.maxDecodedLength / 3 * 4 + 4 else { return nil }
        var symbols = text
        if !url {
            guard text.count % 4 == 0 else { return nil }
            var pad = 0
            while pad < 2, symbols.last == UInt8(ascii: "=") { symbols.removeLast(); pad += 1 }
        }
        var bits: [UInt8] = []
        for symbol in symbols {
            guard let value = value(symbol, url: url) else { return nil }
            for shift in stride(from: 5, through: 0, by: -1) { bits.append(value >> UInt8(shift) & 1) }
        }
        let whole = bits.count / 8 * 8
        guard bits.count - whole < 6, bits[whole...].allSatisfy({ $0 == 0 }) else { return nil }
        if !url, symbols.count % 4 == 1 { return nil }
        return stride(from: 0, to: whole, by: 8).map { start in bits[start..<(start + 8)].reduce(0) { $0 << 1 | $1 } }
    }

    static func value(_ symbol: UInt8, url: Bool) -> UInt8? {
        let alphabet = Array(("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" + (url ? "-_" : "+/")).utf8)
        return alphabet.firstIndex(of: symbol).map { UInt8($0) }
    }
}
