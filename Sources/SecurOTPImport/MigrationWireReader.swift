/// Just enough of the protocol buffers wire format to read a Google Authenticator
/// `MigrationPayload`: varints and length-delimited fields, with fixed-width fields skipped.
/// Every read is bounds-checked against the message it belongs to; anything that does not fit
/// is refused rather than guessed at.
struct MigrationWireReader {
    enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case startGroup = 3
        case endGroup = 4
        case fixed32 = 5
    }

    struct Field {
        let number: UInt64
        let wireType: WireType
    }

    /// Offsets of a length-delimited value inside the reader's bytes.
    typealias Span = Range<Int>

    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position: Int
    private let end: Int

    /// A reader over `span` of `bytes`; the buffer must outlive the reader.
    init(_ bytes: UnsafeBufferPointer<UInt8>, span: Span? = nil) {
        self.bytes = bytes
        position = span?.lowerBound ?? 0
        end = span?.upperBound ?? bytes.count
    }

    var isAtEnd: Bool { position >= end }

    mutating func readVarint() throws(ImportError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < end else { throw ImportError(.malformed, "protobuf varint runs past the end of its message") }
            let byte = bytes[position]
            position += 1
            // The tenth byte may only carry bit 63.
            if shift == 63, byte > 1 { throw ImportError(.malformed, "protobuf varint is longer than 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// The next field's key; field numbers are 1 ... 2^29 - 1.
    mutating func readField() throws(ImportError) -> Field {
        let key = try readVarint()
        let number = key >> 3
        guard number >= 1, number < 1 << 29 else { throw ImportError(.malformed, "protobuf field number \(number) is invalid") }
        guard let wireType = WireType(rawValue: key & 7) else {
            throw ImportError(.malformed, "protobuf field \(number) has unknown wire type \(key & 7)")
        }
        return Field(number: number, wireType: wireType)
    }

    mutating func readLengthDelimited() throws(ImportError) -> Span {
        let length = try readVarint()
        guard length <= UInt64(end - position) else {
            throw ImportError(.malformed, "protobuf field of \(length) bytes runs past the end of its message")
        }
        let start = position
        position += Int(length)
        return start..<position
    }

    /// Steps over a field this reader does not use. Groups (deprecated since proto2 and never
    /// produced by the migration export) are refused.
    mutating func skip(_ field: Field) throws(ImportError) {
        switch field.wireType {
        case .varint: _ = try readVarint()
        case .fixed64: try advance(8, field)
        case .fixed32: try advance(4, field)
        case .lengthDelimited: _ = try readLengthDelimited()
        case .startGroup, .endGroup:
            throw ImportError(.malformed, "protobuf field \(field.number) uses groups, which the migration format never does")
        }
    }

    /// Reads a field the caller expects to have `wireType`; anything else is malformed.
    mutating func expect(_ field: Field, _ wireType: WireType, name: String) throws(ImportError) {
        guard field.wireType == wireType else {
            throw ImportError(.malformed, "protobuf field \(field.number) (\(name)) has wire type \(field.wireType.rawValue), expected \(wireType.rawValue)")
        }
    }

    func string(_ span: Span, name: String) throws(ImportError) -> String {
        guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[span]), as: UTF8.self) else {
            throw ImportError(.malformed, "\(name) is not valid UTF-8")
        }
        return text
    }

    func slice(_ span: Span) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[span])
    }

    private mutating func advance(_ count: Int, _ field: Field) throws(ImportError) {
        guard end - position >= count else {
            throw ImportError(.malformed, "protobuf field \(field.number) runs past the end of its message")
        }
        position += count
    }
}
