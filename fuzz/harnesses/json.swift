// JSONReader: how the PAM module reads a validator's answers (SecurOTPCore, linked into the
// module, fed by the network), and OfflineCache.parse, how it reads its offline code files.
//
// Properties: the reader accepts only what an RFC 8259 recognizer written here accepts, within
// its documented limits (depth, members per object, unique keys); what it accepts, written out
// again by a serializer written here, reads back as the same value. The offline cache parser
// never accepts bytes whose MAC is not the one its serializer writes, and what it accepts
// serializes back to the same bytes.
import FuzzSupport
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.bytes(data, size)
    checkReader(input)
    checkOfflineCache(input)
    return 0
}

private func checkReader(_ input: [UInt8]) {
    guard let value = JSONReader.parse(input) else { return }
    var recognizer = ReferenceJSON(input)
    Fuzz.require(recognizer.document(), "JSONReader accepted what RFC 8259 does not: \(Fuzz.hex(input.prefix(200)))")
    Fuzz.require(input.count <= JSONReader.maxBytes, "accepted \(input.count) bytes")
    checkLimits(value, depth: 1)
    let written = serialize(value)
    let again = JSONReader.parse(Array(written.utf8))
    Fuzz.require(again == value, "round trip changed the value: \(Fuzz.printable(written))")
}

private func checkLimits(_ value: JSONValue, depth: Int) {
    switch value {
    case .array(let items):
        Fuzz.require(depth <= JSONReader.maxDepth, "nesting \(depth) deep")
        for item in items { checkLimits(item, depth: depth + 1) }
    case .object(let members):
        Fuzz.require(depth <= JSONReader.maxDepth, "nesting \(depth) deep")
        Fuzz.require(members.count <= JSONReader.maxMembers, "\(members.count) members")
        Fuzz.require(Set(members.map { $0.key }).count == members.count, "duplicate keys")
        for member in members { checkLimits(member.value, depth: depth + 1) }
    default: break
    }
}

private func serialize(_ value: JSONValue) -> String {
    switch value {
    case .null: return "null"
    case .bool(let flag): return flag ? "true" : "false"
    case .number(let number): return number.map { String($0) } ?? "0.5" // a number without a whole value
    case .string(let text): return quote(text)
    case .array(let items): return "[" + items.map(serialize).joined(separator: ",") + "]"
    case .object(let members): return "{" + members.map { quote($0.key) + ":" + serialize($0.value) }.joined(separator: ",") + "}"
    }
}

private func quote(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        default:
            if scalar.value < 0x20 {
                let hex = Array("0123456789abcdef")
                out += "\\u00" + String(hex[Int(scalar.value >> 4)]) + String(hex[Int(scalar.value & 0xf)])
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

/// An RFC 8259 recognizer, written from the grammar: no limits, no values.
private struct ReferenceJSON {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() -> Bool {
        guard String(validating: bytes, as: UTF8.self) != nil else { return false }
        whitespace()
        guard value() else { return false }
        whitespace()
        return index == bytes.count
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func whitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d { index += 1 }
    }

    private mutating func literal(_ text: String) -> Bool {
        let expected = Array(text.utf8)
        guard bytes.count - index >= expected.count, Array(bytes[index..<(index + expected.count)]) == expected else { return false }
        index += expected.count
        return true
    }

    private mutating func value() -> Bool {
        switch current {
        case UInt8(ascii: "{"): return container(close: UInt8(ascii: "}"), member: true)
        case UInt8(ascii: "["): return container(close: UInt8(ascii: "]"), member: false)
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    private mutating func container(close: UInt8, member: Bool) -> Bool {
        index += 1
        whitespace()
        if current == close {
            index += 1
            return true
        }
        while true {
            whitespace()
            if member {
                guard current == UInt8(ascii: "\""), string() else { return false }
                whitespace()
                guard current == UInt8(ascii: ":") else { return false }
                index += 1
                whitespace()
            }
            guard value() else { return false }
            whitespace()
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard current == close else { return false }
            index += 1
            return true
        }
    }

    private mutating func string() -> Bool {
        index += 1
        while let byte = current {
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return true
            case UInt8(ascii: "\\"):
                guard let escape = current else { return false }
                index += 1
                if escape == UInt8(ascii: "u") {
                    for _ in 0..<4 {
                        guard let digit = current, isHex(digit) else { return false }
                        index += 1
                    }
                } else if !Array("\"\\/bfnrt".utf8).contains(escape) {
                    return false
                }
            default:
                if byte < 0x20 { return false }
            }
        }
        return false
    }

    private func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    private mutating func digits() -> Int {
        var count = 0
        while let byte = current, byte >= 0x30, byte <= 0x39 {
            index += 1
            count += 1
        }
        return count
    }

    private mutating func number() -> Bool {
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return false
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return true
    }
}

// MARK: - Offline cache files

private let pepper = Array(repeating: UInt8(0x5a), count: 32)

private func checkOfflineCache(_ input: [UInt8]) {
    // As found, and with the MAC line the serializer would write, so the fuzzer reaches the
    // line parser behind the MAC.
    Fuzz.require(OfflineCache.parse(input, user: "alice", pepper: pepper) == nil || hasValidMAC(input),
                 "accepted a cache file without its MAC")
    var body = Array(input.prefix(4096))
    if body.last != 0x0a { body.append(0x0a) }
    let signed = Array(body) + Array("mac \(Hex.encode(HMAC.authenticate(.sha256, key: SecretBytes(copying: pepper), message: OfflineCache.macDomain + Array(body))))\n".utf8)
    guard let cache = OfflineCache.parse(signed, user: "alice", pepper: pepper) else { return }
    Fuzz.require(cache.codes.count <= OfflineCache.maxCodes, "\(cache.codes.count) codes")
    let written = cache.serialized(user: "alice", pepper: pepper)
    Fuzz.require(OfflineCache.parse(written, user: "alice", pepper: pepper) == cache, "a parsed cache does not read back the same")
    Fuzz.require(OfflineCache.parse(written, user: "bob", pepper: pepper) == nil, "a cache read for another user")
}

private func hasValidMAC(_ input: [UInt8]) -> Bool {
    guard input.last == 0x0a else { return false }
    var start = input.count - 1
    while start > 0, input[start - 1] != 0x0a { start -= 1 }
    let body = Array(input[..<start])
    let line = String(decoding: input[start..<(input.count - 1)], as: UTF8.self)
    let mac = Hex.encode(HMAC.authenticate(.sha256, key: SecretBytes(copying: pepper), message: OfflineCache.macDomain + body))
    return line == "mac " + mac
}
