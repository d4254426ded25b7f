/// Request bodies for a validator: one flat JSON object of strings and booleans, written
/// straight into a SecretBytes of exactly the right size. Bodies carry passcodes and PINs, so
/// they exist in one buffer that is wiped when it goes away — no growing array leaves copies
/// behind.
///
/// Strings are escaped as RFC 8259 requires (quote, backslash, control characters); bytes
/// that are not well-formed UTF-8 (a passcode is whatever the user typed) become U+FFFD, so
/// the body is always valid JSON.
public enum JSONWriter {
    public enum Field {
        case text(String)
        /// Bytes the caller owns and wipes (a passcode or PIN); valid during the call.
        case secret(UnsafeBufferPointer<UInt8>)
        case bool(Bool)
        case integer(Int64)
        /// An array of flat objects (offline codes used: serial and counter).
        case objects([[(key: String, value: Field)]])
        /// An array of strings (the user's groups).
        case texts([String])
    }

    public static func object(_ members: [(key: String, value: Field)]) -> SecretBytes {
        var length = 0
        emit(members) { _ in length += 1 }
        let body = SecretBytes(count: length)
        body.withUnsafeMutableBytes { buffer in
            var index = 0
            emit(members) { byte in
                if index < buffer.count { buffer[index] = byte }
                index += 1
            }
        }
        return body
    }

    private static func emit(_ members: [(key: String, value: Field)], _ sink: (UInt8) -> Void) {
        sink(UInt8(ascii: "{"))
        var first = true
        for member in members {
            if !first { sink(UInt8(ascii: ",")) }
            first = false
            Array(member.key.utf8).withUnsafeBufferPointer { quote($0, sink) }
            sink(UInt8(ascii: ":"))
            switch member.value {
            case .text(let text): Array(text.utf8).withUnsafeBufferPointer { quote($0, sink) }
            case .secret(let bytes): quote(bytes, sink)
            case .bool(let value): for byte in (value ? "true" : "false").utf8 { sink(byte) }
            case .integer(let value): for byte in String(value).utf8 { sink(byte) }
            case .objects(let objects):
                sink(UInt8(ascii: "["))
                for (index, object) in objects.enumerated() {
                    if index > 0 { sink(UInt8(ascii: ",")) }
                    emit(object, sink)
                }
                sink(UInt8(ascii: "]"))
            case .texts(let texts):
                sink(UInt8(ascii: "["))
                for (index, text) in texts.enumerated() {
                    if index > 0 { sink(UInt8(ascii: ",")) }
                    Array(text.utf8).withUnsafeBufferPointer { quote($0, sink) }
                }
                sink(UInt8(ascii: "]"))
            }
        }
        sink(UInt8(ascii: "}"))
    }

    private static func quote(_ bytes: UnsafeBufferPointer<UInt8>, _ sink: (UInt8) -> Void) {
        func escape(_ letter: Unicode.Scalar) {
            sink(UInt8(ascii: "\\"))
            sink(UInt8(ascii: letter))
        }
        let hex = Array("0123456789abcdef".utf8)
        sink(UInt8(ascii: "\""))
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""): escape("\"")
            case UInt8(ascii: "\\"): escape("\\")
            case 0x0a: escape("n")
            case 0x0d: escape("r")
            case 0x09: escape("t")
            case 0x08: escape("b")
            case 0x0c: escape("f")
            case 0..<0x20:
                escape("u")
                for byte in [UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]] { sink(byte) }
            case 0..<0x80:
                sink(byte)
            default:
                let length = UTF8Encoding.sequenceLength(bytes, at: index)
                if length == 0 {
                    escape("u")
                    for byte in "fffd".utf8 { sink(byte) }
                    index += 1
                } else {
                    for offset in 0..<length { sink(bytes[index + offset]) }
                    index += length
                }
                continue
            }
            index += 1
        }
        sink(UInt8(ascii: "\""))
    }
}
