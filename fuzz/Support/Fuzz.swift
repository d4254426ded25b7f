#if canImport(Glibc)
import Glibc
#endif

/// What every harness shares: the libFuzzer entry glue and property checks that stop the run
/// with a message, so libFuzzer saves the input that broke the property.
public enum Fuzz {
    /// Stops the run (SIGABRT, which libFuzzer reports as a crash and saves the input) when a
    /// property of the parser's result does not hold.
    public static func require(_ condition: Bool, _ message: @autoclosure () -> String,
                               file: StaticString = #fileID, line: UInt = #line) {
        guard !condition else { return }
        fputs("PROPERTY VIOLATED at \(file):\(line): \(printable(message()))\n", stderr)
        abort()
    }

    /// Control characters (NUL would cut the message short) as \xNN.
    public static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7f {
                out += "\\x" + hex([UInt8(scalar.value)])
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Copies libFuzzer's buffer into an array (nil pointer: empty input).
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Bytes from hex digits (fixed keys in harnesses); stops at the first non-hex pair.
    public static func bytes(fromHex text: String) -> [UInt8] {
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: byte - 0x30
            case 0x61...0x66: byte - 0x61 + 10
            case 0x41...0x46: byte - 0x41 + 10
            default: nil
            }
        }
        let digits = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        while index + 1 < digits.count, let high = nibble(digits[index]), let low = nibble(digits[index + 1]) {
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// Lowercase hex, for messages.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
