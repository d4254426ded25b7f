import Foundation
import SecurOTPCore

/// The one entry point for importing tokens: looks at the bytes, decides which format they are
/// in and hands them to that format's reader. All or nothing: when any entry is bad the whole
/// import fails, and the error names the line, entry or key.
public enum TokenImporter {
    /// Nothing securotp imports comes near this; a bigger input is refused before it is read.
    public static let maximumInputSize = 1 << 20

    /// Listed in the error for input securotp does not recognise.
    public static let supportedFormats = """
        otpauth:// URIs (one per line; blank lines and # comments allowed), \
        otpauth-migration://offline?data=… (Google Authenticator export), \
        PSKC XML (RFC 6030 <KeyContainer>), RSA SecurID .sdtid XML (<TKNBatch>) and \
        SecurID CTF strings (81–85 digits, ctfData= URLs, v3/v4 base64)
        """

    public static func parse(_ input: [UInt8], options: ImportOptions) throws(ImportError) -> [ImportedToken] {
        guard input.count <= maximumInputSize else {
            throw ImportError(.tooLarge, "input is \(input.count) bytes; securotp reads at most \(maximumInputSize) bytes (1 MiB)")
        }
        var body = input[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) } // UTF-8 byte order mark
        guard let first = body.firstIndex(where: { !isWhitespace($0) }) else {
            throw ImportError(.unrecognized, "the input is empty; securotp imports \(supportedFormats)")
        }
        if body[first] == UInt8(ascii: "<") { return try parseXML(Array(body[first...]), options: options) }
        return try parseLines(body, options: options)
    }

    // MARK: XML

    static func parseXML(_ bytes: [UInt8], options: ImportOptions) throws(ImportError) -> [ImportedToken] {
        try checkXMLIsSafe(bytes)
        let root = try rootElementName(bytes)
        switch localName(root) {
        case "KeyContainer": return try PSKCImporter.decode(bytes, options: options)
        case "TKNBatch": return try decodeSDTID(bytes, options: options)
        default:
            throw ImportError(.unrecognized, "XML root element <\(root)> is neither PSKC <KeyContainer> nor SecurID <TKNBatch>; "
                + "securotp imports \(supportedFormats)")
        }
    }

    /// The SecurID .sdtid reader lives in SecurIDSDTID.swift (its own engineer).
    static func decodeSDTID(_ bytes: [UInt8], options: ImportOptions) throws(ImportError) -> [ImportedToken] {
        try SecurIDSDTID.decode(bytes, options: options)
    }

    /// The SecurID CTF reader lives in SecurIDCTF.swift (its own engineer).
    static func decodeCTF(_ text: String, options: ImportOptions) throws(ImportError) -> ImportedToken {
        try SecurIDCTF.decode(text, options: options)
    }

    /// Refuses what XML parsers can be tricked with before any parser sees the bytes: document
    /// type declarations (entity expansion, "billion laughs", external entities), and encodings
    /// other than ASCII-compatible ones, where the byte scan below could be fooled.
    static func checkXMLIsSafe(_ bytes: [UInt8]) throws(ImportError) {
        if bytes.contains(0) {
            throw ImportError(.malformed, "XML input contains NUL bytes; only UTF-8 XML is read")
        }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            throw ImportError(.unsupported, "UTF-16 XML is not supported; convert the file to UTF-8")
        }
        for marker in ["<!DOCTYPE", "<!ENTITY"] where containsCaseInsensitive(bytes, marker) {
            throw ImportError(.malformed, "XML with a document type declaration (\(marker)) is refused: "
                + "PSKC and .sdtid files have none, and entities can be used to attack the parser")
        }
        if let encoding = declaredEncoding(bytes) {
            let folded = encoding.lowercased()
            guard ["utf-8", "utf8", "us-ascii", "ascii"].contains(folded) || latin1Names.contains(folded) else {
                throw ImportError(.unsupported, "XML encoding \"\(encoding)\" is not supported; convert the file to UTF-8")
            }
        }
    }

    /// The name (with any prefix) of the first element after the prolog.
    static func rootElementName(_ bytes: [UInt8]) throws(ImportError) -> String {
        var index = 0
        while index < bytes.count {
            if isWhitespace(bytes[index]) {
                index += 1
            } else if startsWith(bytes, at: index, "<?") {
                guard let end = find(bytes, "?>", from: index + 2) else { break }
                index = end + 2
            } else if startsWith(bytes, at: index, "<!--") {
                guard let end = find(bytes, "-->", from: index + 4) else { break }
                index = end + 3
            } else if bytes[index] == UInt8(ascii: "<") {
                var end = index + 1
                while end < bytes.count, isNameByte(bytes[end]) { end += 1 }
                guard end > index + 1 else { break }
                return String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
            } else {
                break
            }
        }
        throw ImportError(.malformed, "the XML has no root element (truncated or not XML)")
    }

    static func localName(_ qualified: String) -> String {
        guard let colon = qualified.lastIndex(of: ":") else { return qualified }
        return String(qualified[qualified.index(after: colon)...])
    }

    static let latin1Names = ["iso-8859-1", "latin1"]

    /// Whether the XML declaration names ISO-8859-1, where any byte is a character.
    static func declaresLatin1(_ bytes: [UInt8]) -> Bool {
        declaredEncoding(bytes).map { latin1Names.contains($0.lowercased()) } ?? false
    }

    private static func declaredEncoding(_ bytes: [UInt8]) -> String? {
        guard startsWith(bytes, at: 0, "<?xml"), let end = find(bytes, "?>", from: 5) else { return nil }
        let declaration = String(decoding: bytes[0..<end], as: UTF8.self)
        guard let range = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[range.upperBound...].drop(while: { $0 == " " || $0 == "=" || $0 == "\t" })
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return String(rest.dropFirst().prefix(while: { $0 != quote }))
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        !isWhitespace(byte) && byte != UInt8(ascii: ">") && byte != UInt8(ascii: "/")
    }

    // MARK: line-based formats

    private enum LineFormat { case otpauth, migration, ctf }

    static func parseLines(_ body: ArraySlice<UInt8>, options: ImportOptions) throws(ImportError) -> [ImportedToken] {
        var tokens = [ImportedToken]()
        var lineNumber = 0
        var sawEntry = false
        for rawLine in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = trimmed(rawLine)
            if line.isEmpty || line.first == UInt8(ascii: "#") { continue }
            guard let text = String(validating: line, as: UTF8.self), let format = classify(Array(line)) else {
                if sawEntry {
                    throw ImportError(.unrecognized, "line \(lineNumber) is not an otpauth://, otpauth-migration:// or SecurID CTF entry")
                }
                throw ImportError(.unrecognized, "unrecognized input (line \(lineNumber)); securotp imports \(supportedFormats)")
            }
            sawEntry = true
            do throws(ImportError) {
                switch format {
                case .otpauth: tokens.append(try OTPAuthImport.token(fromURI: text))
                case .migration: tokens += try MigrationImport.tokens(fromURI: text)
                case .ctf: tokens.append(try decodeCTF(text, options: options))
                }
            } catch {
                throw ImportError(error.code, "line \(lineNumber): \(error.message)")
            }
        }
        guard sawEntry else {
            throw ImportError(.unrecognized, "the input holds only blank lines and comments; securotp imports \(supportedFormats)")
        }
        return tokens
    }

    private static func classify(_ line: [UInt8]) -> LineFormat? {
        if startsWithCaseInsensitive(line, "otpauth://") { return .otpauth }
        if startsWithCaseInsensitive(line, "otpauth-migration://") { return .migration }
        if looksLikeCTF(line) { return .ctf }
        return nil
    }

    /// SecurID CTF strings: 81–85 digits (dashes allowed between groups), a URL carrying
    /// `ctfData=`, or a v3/v4 base64 string (388 characters, starting with A or B; maybe
    /// percent-encoded).
    static func looksLikeCTF(_ line: [UInt8]) -> Bool {
        if containsCaseInsensitive(line, "ctfData=") { return true }
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        if line.allSatisfy({ isDigit($0) || $0 == UInt8(ascii: "-") }) {
            return (81...85).contains(line.filter(isDigit).count)
        }
        guard line.first == UInt8(ascii: "A") || line.first == UInt8(ascii: "B") else { return false }
        var characters = 0
        var index = 0
        while index < line.count {
            let byte = line[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < line.count else { return false }
                let escape = String(decoding: line[(index + 1)...(index + 2)], as: UTF8.self).uppercased()
                guard ["2B", "2F", "3D"].contains(escape) else { return false }
                index += 3
            } else {
                guard Base64.standardValue(byte) != nil || byte == UInt8(ascii: "=") else { return false }
                index += 1
            }
            characters += 1
        }
        return characters == 388
    }

    // MARK: byte helpers

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let first = bytes.firstIndex(where: { !isWhitespace($0) }),
              let last = bytes.lastIndex(where: { !isWhitespace($0) })
        else { return [] }
        return bytes[first...last]
    }

    static func foldASCII(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    static func startsWith(_ bytes: [UInt8], at index: Int, _ prefix: String) -> Bool {
        let wanted = Array(prefix.utf8)
        guard index + wanted.count <= bytes.count else { return false }
        return bytes[index..<(index + wanted.count)].elementsEqual(wanted)
    }

    static func startsWithCaseInsensitive(_ bytes: [UInt8], _ prefix: String) -> Bool {
        let wanted = Array(prefix.utf8).map(foldASCII)
        return bytes.count >= wanted.count && bytes.prefix(wanted.count).map(foldASCII) == wanted
    }

    static func find(_ bytes: [UInt8], _ needle: String, from start: Int) -> Int? {
        let wanted = Array(needle.utf8)
        guard start >= 0, bytes.count >= wanted.count, start <= bytes.count - wanted.count else { return nil }
        for index in start...(bytes.count - wanted.count) where bytes[index] == wanted[0] {
            if bytes[index..<(index + wanted.count)].elementsEqual(wanted) { return index }
        }
        return nil
    }

    static func containsCaseInsensitive(_ bytes: [UInt8], _ needle: String) -> Bool {
        let wanted = Array(needle.utf8).map(foldASCII)
        guard !wanted.isEmpty, bytes.count >= wanted.count else { return false }
        for index in 0...(bytes.count - wanted.count) where foldASCII(bytes[index]) == wanted[0] {
            var matches = true
            for offset in 1..<wanted.count where foldASCII(bytes[index + offset]) != wanted[offset] {
                matches = false
                break
            }
            if matches { return true }
        }
        return false
    }
}

extension TokenImporter {
    /// Base64 (RFC 4648 §4, and the URL-safe alphabet of §5 where asked for). Whitespace is
    /// skipped (XML values wrap), padding is optional but only at the end.
    enum Base64 {
        static func standardValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"): 62
            case UInt8(ascii: "/"): 63
            default: nil
            }
        }

        private static func value(_ byte: UInt8, urlSafe: Bool) -> UInt8? {
            if let value = standardValue(byte) { return value }
            guard urlSafe else { return nil }
            if byte == UInt8(ascii: "-") { return 62 }
            if byte == UInt8(ascii: "_") { return 63 }
            return nil
        }

        /// Decoded length, or nil when the text is not base64.
        private static func decodedLength(_ text: some Collection<UInt8>, urlSafe: Bool) -> Int? {
            var symbols = 0
            var padding = 0
            for byte in text {
                if TokenImporter.isWhitespace(byte) { continue }
                if byte == UInt8(ascii: "=") {
                    padding += 1
                    continue
                }
                guard padding == 0, value(byte, urlSafe: urlSafe) != nil else { return nil }
                symbols += 1
            }
            guard symbols % 4 != 1, padding <= 2 else { return nil }
            if padding > 0, (symbols + padding) % 4 != 0 { return nil }
            return symbols * 3 / 4
        }

        private static func decode(_ text: some Collection<UInt8>, urlSafe: Bool, into out: UnsafeMutableBufferPointer<UInt8>) {
            var buffer: UInt32 = 0
            var bits = 0
            var written = 0
            for byte in text {
                guard let v = value(byte, urlSafe: urlSafe) else { continue }
                buffer = (buffer << 6 | UInt32(v)) & 0xFFFF
                bits += 6
                if bits >= 8, written < out.count {
                    out[written] = UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8))
                    written += 1
                    bits -= 8
                }
            }
            buffer = 0
        }

        static func decode(_ text: some Collection<UInt8>, urlSafe: Bool = false) -> [UInt8]? {
            guard let length = decodedLength(text, urlSafe: urlSafe) else { return nil }
            var out = [UInt8](repeating: 0, count: length)
            out.withUnsafeMutableBufferPointer { decode(text, urlSafe: urlSafe, into: $0) }
            return out
        }

        /// For key material: the bytes go straight into a wiped-on-release buffer.
        static func decodeSecret(_ text: some Collection<UInt8>, urlSafe: Bool = false) -> SecretBytes? {
            guard let length = decodedLength(text, urlSafe: urlSafe) else { return nil }
            let secret = SecretBytes(count: length)
            secret.withUnsafeMutableBytes { decode(text, urlSafe: urlSafe, into: $0) }
            return secret
        }
    }
}
