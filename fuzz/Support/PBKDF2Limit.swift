/// PSKC files may ask for up to 10 million PBKDF2 iterations (the importer's limit, which the
/// unit tests check); a fuzzer would only measure PBKDF2 with them. Inputs whose
/// IterationCount is above 20 000 — digits read up to the closing tag, CDATA included — or is
/// spelled with character references are skipped.
public enum PBKDF2Limit {
    public static let maximum = 20_000

    public static func allows(_ input: [UInt8]) -> Bool {
        let marker = Array("IterationCount".utf8)
        var index = 0
        while let found = find(marker, in: input, from: index) {
            var position = found + marker.count
            while position < input.count, input[position] != UInt8(ascii: ">") { position += 1 }
            var value = 0
            while position + 1 < input.count, !(input[position] == UInt8(ascii: "<") && input[position + 1] == UInt8(ascii: "/")) {
                let byte = input[position]
                if byte == UInt8(ascii: "&") { return false }
                if (0x30...0x39).contains(byte) { value = min(value * 10 + Int(byte - 0x30), 1_000_000_000) }
                position += 1
            }
            if value > maximum { return false }
            index = found + 1
        }
        return true
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index..<(index + needle.count)].elementsEqual(needle) {
            return index
        }
        return nil
    }
}
