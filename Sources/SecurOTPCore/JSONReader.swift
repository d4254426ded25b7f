/// A strict JSON reader (RFC 8259) for what the PAM module receives from a validator: a pure
/// function from bytes to a value, without Foundation and without traps, so any answer —
/// truncated, hostile, or from the wrong server — ends in nil, never in a crash inside sshd.
///
/// Stricter than the RFC where it costs nothing: input at most `maxBytes`, containers nested
/// at most `maxDepth` deep, at most `maxMembers` members per object, no duplicate keys, no
/// U+0000 in strings (they end up in C strings), no unpaired surrogates, UTF-8 only.
public enum JSONReader {
    public static let maxBytes = 65_536
    public static let maxDepth = 16
    public static let maxMembers = 64

    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        guard bytes.count <= maxBytes else { return nil }
        var parser = JSONParser(bytes: bytes)
        parser.skipSpace()
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        return parser.atEnd ? value : nil
    }

    public static func parse(_ bytes: [UInt8]) -> JSONValue? {
        bytes.withUnsafeBufferPointer { parse($0) }
    }
}

private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var atEnd: Bool { index >= bytes.count }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipSpace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d { index += 1 }
    }

    mutating func take(_ byte: UInt8) -> Bool {
        guard current == byte else { return false }
        index += 1
        return true
    }

    mutating func take(word: [UInt8]) -> Bool {
        for byte in word {
            guard take(byte) else { return false }
        }
        return true
    }

    /// The value starting here; `depth` is how many containers enclose it.
    mutating func value(depth: Int) -> JSONValue? {
        guard let first = current else { return nil }
        switch first {
        case UInt8(ascii: "{"): return depth < JSONReader.maxDepth ? object(depth: depth) : nil
        case UInt8(ascii: "["): return depth < JSONReader.maxDepth ? array(depth: depth) : nil
        case UInt8(ascii: "\""): return string().map { .string($0) }
        case UInt8(ascii: "t"): return take(word: Array("true".utf8)) ? .bool(true) : nil
        case UInt8(ascii: "f"): return take(word: Array("false".utf8)) ? .bool(false) : nil
        case UInt8(ascii: "n"): return take(word: Array("null".utf8)) ? .null : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return nil
        }
    }

    mutating func object(depth: Int) -> JSONValue? {
        index += 1 // {
        var members: [JSONMember] = []
        skipSpace()
        if take(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipSpace()
            guard current == UInt8(ascii: "\""), let key = string(), members.count < JSONReader.maxMembers,
                  !members.contains(where: { $0.key == key }) else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            guard let value = value(depth: depth + 1) else { return nil }
            members.append(JSONMember(key: key, value: value))
            skipSpace()
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "}")) ? .object(members) : nil
        }
    }

    mutating func array(depth: Int) -> JSONValue? {
        index += 1 // [
        var items: [JSONValue] = []
        skipSpace()
        if take(UInt8(ascii: "]")) { return .array(items) }
        while true {
            skipSpace()
            guard let item = value(depth: depth + 1) else { return nil }
            items.append(item)
            skipSpace()
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "]")) ? .array(items) : nil
        }
    }

    mutating func string() -> String? {
        index += 1 // opening quote
        var out: [UInt8] = []
        while let byte = current {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = current else { return nil }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = unicodeEscape() else { return nil }
                    UTF8Encoding.append(scalar, to: &out)
                default: return nil
                }
            case 0..<0x20:
                return nil // control characters must be escaped
            default:
                out.append(byte)
            }
        }
        return nil // no closing quote
    }

    /// After `\u`: four hex digits, or a surrogate pair written as two escapes. U+0000 and
    /// unpaired surrogates are refused.
    mutating func unicodeEscape() -> UInt32? {
        guard let first = hex4() else { return nil }
        switch first {
        case 0: return nil
        case 0xD800...0xDBFF:
            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let second = hex4(), (0xDC00...0xDFFF).contains(second) else { return nil }
            return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        case 0xDC00...0xDFFF: return nil
        default: return first
        }
    }

    mutating func hex4() -> UInt32? {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current else { return nil }
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A")) + 10
            default: return nil
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; the value only for whole numbers
    /// that fit Int64.
    mutating func number() -> JSONValue? {
        let negative = take(UInt8(ascii: "-"))
        guard let first = current, isDigit(first) else { return nil }
        var value: Int64 = 0
        var fits = true
        if first == UInt8(ascii: "0") {
            index += 1
        } else {
            while let byte = current, isDigit(byte) {
                let digit = Int64(byte - UInt8(ascii: "0"))
                let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
                let (next, overflowB) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
                if overflowA || overflowB { fits = false } else { value = next }
                index += 1
            }
        }
        var whole = true
        if take(UInt8(ascii: ".")) {
            guard skipDigits() else { return nil }
            whole = false
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard skipDigits() else { return nil }
            whole = false
        }
        return .number(whole && fits ? value : nil)
    }

    /// One or more digits.
    mutating func skipDigits() -> Bool {
        guard let byte = current, isDigit(byte) else { return false }
        while let byte = current, isDigit(byte) { index += 1 }
        return true
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}

/// UTF-8 without the standard library's transcoders: what the JSON reader and writer need.
enum UTF8Encoding {
    /// Appends a Unicode scalar value (not a surrogate, at most U+10FFFF).
    static func append(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(truncatingIfNeeded: scalar))
        case 0x80..<0x800:
            out.append(0xC0 | UInt8(truncatingIfNeeded: scalar >> 6))
            out.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(0xE0 | UInt8(truncatingIfNeeded: scalar >> 12))
            out.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            out.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        default:
            out.append(0xF0 | UInt8(truncatingIfNeeded: (scalar >> 18) & 0x07))
            out.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 12) & 0x3F))
            out.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            out.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        }
    }

    /// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
    /// surrogates, nothing above U+10FFFF) starting at `index`, or 0 if there is none.
    static func sequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        guard index >= 0, index < bytes.count else { return 0 }
        let lead = bytes[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: return 0
        }
        guard bytes.count - index >= length, secondRange.contains(bytes[index + 1]) else { return 0 }
        var next = index + 2
        while next < index + length {
            guard (0x80...0xBF).contains(bytes[next]) else { return 0 }
            next += 1
        }
        return length
    }
}
