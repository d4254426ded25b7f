/// A small strict CBOR reader (RFC 8949) for what WebAuthn attestation objects and COSE keys
/// use: integers, byte and text strings, arrays, maps, false/true/null. Definite lengths and
/// shortest-form arguments only (CTAP2's canonical form, which authenticators and browsers
/// write), no tags, no floats, no duplicate map keys, bounded depth, item count and size.
/// Every input comes from a browser: nothing here traps.
public indirect enum CBOR: Sendable, Equatable {
    case unsigned(UInt64)
    /// -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([(CBOR, CBOR)])
    case bool(Bool)
    case null

    public static func == (a: CBOR, b: CBOR) -> Bool {
        switch (a, b) {
        case (.unsigned(let x), .unsigned(let y)), (.negative(let x), .negative(let y)): return x == y
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.text(let x), .text(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.map(let x), .map(let y)):
            guard x.count == y.count else { return false }
            for (p, q) in zip(x, y) where p.0 != q.0 || p.1 != q.1 { return false }
            return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        default: return false
        }
    }

    /// The value of a map's member with this key.
    public subscript(key: CBOR) -> CBOR? {
        guard case .map(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    public subscript(key: String) -> CBOR? { self[.text(key)] }

    /// An integer key: COSE labels (1, 3, -1, -2, -3).
    public subscript(label label: Int64) -> CBOR? {
        self[label >= 0 ? .unsigned(UInt64(label)) : .negative(UInt64(-(label + 1)))]
    }

    public var bytes: [UInt8]? { if case .bytes(let b) = self { return b }; return nil }
    public var text: String? { if case .text(let t) = self { return t }; return nil }

    /// A signed integer that fits Int64.
    public var integer: Int64? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int64.max) ? Int64(n) : nil
        case .negative(let n): return n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: return nil
        }
    }
}

/// Reads one CBOR item from a byte array; `offset` after it tells where the item ended (COSE
/// keys inside authenticator data are followed by more bytes).
public struct CBORReader {
    public static let maxDepth = 8
    public static let maxItems = 1024
    public static let maxInput = 16 * 1024

    private let input: [UInt8]
    public private(set) var offset: Int
    private var items = 0

    public init(_ input: [UInt8], offset: Int = 0) {
        self.input = input
        self.offset = offset
    }

    /// One item, or nil for anything malformed, too deep, too large, or of a kind not read.
    public static func decodeAll(_ input: [UInt8]) -> CBOR? {
        var reader = CBORReader(input)
        guard let value = reader.read(), reader.offset == input.count else { return nil }
        return value
    }

    public mutating func read() -> CBOR? {
        guard input.count <= Self.maxInput else { return nil }
        return item(depth: 0)
    }

    private mutating func byte() -> UInt8? {
        guard offset >= 0, offset < input.count else { return nil }
        defer { offset += 1 }
        return input[offset]
    }

    private mutating func take(_ count: UInt64) -> [UInt8]? {
        guard count <= UInt64(input.count), offset >= 0, offset <= input.count, Int(count) <= input.count - offset else { return nil }
        let slice = Array(input[offset..<(offset + Int(count))])
        offset += Int(count)
        return slice
    }

    /// The argument of a head; shortest form only.
    private mutating func argument(_ info: UInt8) -> UInt64? {
        switch info {
        case 0..<24: return UInt64(info)
        case 24:
            guard let b = byte(), b >= 24 else { return nil }
            return UInt64(b)
        case 25, 26, 27:
            let width = info == 25 ? 2 : info == 26 ? 4 : 8
            guard let raw = take(UInt64(width)) else { return nil }
            var value: UInt64 = 0
            for b in raw { value = value << 8 | UInt64(b) }
            let floor: UInt64 = width == 2 ? 0x100 : width == 4 ? 0x1_0000 : 0x1_0000_0000
            return value >= floor ? value : nil
        default: return nil // 28–30 reserved, 31 indefinite length
        }
    }

    private mutating func item(depth: Int) -> CBOR? {
        guard depth <= Self.maxDepth else { return nil }
        items += 1
        guard items <= Self.maxItems, let head = byte() else { return nil }
        let major = head >> 5
        let info = head & 0x1f
        if major == 7 {
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            default: return nil // undefined, simple values, floats: never in what we read
            }
        }
        guard let argument = argument(info) else { return nil }
        switch major {
        case 0: return .unsigned(argument)
        case 1: return .negative(argument)
        case 2: return take(argument).map(CBOR.bytes)
        case 3:
            guard let raw = take(argument), let text = String(validating: raw, as: UTF8.self) else { return nil }
            return .text(text)
        case 4:
            guard argument <= UInt64(Self.maxItems) else { return nil }
            var elements: [CBOR] = []
            for _ in 0..<Int(argument) {
                guard let element = item(depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return .array(elements)
        case 5:
            guard argument <= UInt64(Self.maxItems) else { return nil }
            var members: [(CBOR, CBOR)] = []
            for _ in 0..<Int(argument) {
                guard let key = item(depth: depth + 1), let value = item(depth: depth + 1) else { return nil }
                guard !members.contains(where: { $0.0 == key }) else { return nil }
                members.append((key, value))
            }
            return .map(members)
        default: return nil // 6: tags
        }
    }
}
