import SecurOTPCore

/// One element of a parsed .sdtid document: its name, the character data directly inside it
/// (entity references decoded, CDATA included) and its child elements in document order.
struct SecurIDXMLElement {
    var name: [UInt8]
    var text: [UInt8] = []
    var children: [SecurIDXMLElement] = []

    var nameText: String { String(decoding: name, as: UTF8.self) }

    func isNamed(_ other: String) -> Bool { name.elementsEqual(other.utf8) }

    /// The first element called `name` among the descendants, depth-first in document order.
    func descendant(named name: String) -> SecurIDXMLElement? {
        for child in children {
            if child.isNamed(name) { return child }
            if let found = child.descendant(named: name) { return found }
        }
        return nil
    }
}

/// A deliberately small XML reader for .sdtid files: elements, attributes (read and ignored),
/// character data, the five predefined entities, character references, CDATA, comments and
/// processing instructions. No DTD: any `<!DOCTYPE` or `<!ENTITY` is refused, so there is
/// nothing to expand and no external resource to fetch. Nesting depth and element count are
/// bounded; every error is an `ImportError(.malformed, …)` naming the byte offset.
struct SecurIDXML {
    static let maximumDepth = 16
    static let maximumElements = 50_000

    private let bytes: [UInt8]
    private var index = 0
    private var elements = 0

    static func parse(_ bytes: [UInt8]) throws(ImportError) -> SecurIDXMLElement {
        for forbidden in ["<!DOCTYPE", "<!ENTITY"] where SecurIDText.find(Array(forbidden.utf8), in: bytes) != nil {
            throw ImportError(.malformed, "the .sdtid file contains \(forbidden): DTDs and entity declarations are not accepted")
        }
        var parser = SecurIDXML(bytes: bytes)
        return try parser.document()
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func document() throws(ImportError) -> SecurIDXMLElement {
        if starts(with: [0xEF, 0xBB, 0xBF]) { index += 3 }
        try skipMisc()
        guard peek() == UInt8(ascii: "<") else {
            throw error(index >= bytes.count ? "the .sdtid file has no root element" : "text before the root element")
        }
        index += 1
        let root = try element(depth: 1)
        try skipMisc()
        guard index >= bytes.count else { throw error("content after the root element") }
        return root
    }

    /// Whitespace, comments and processing instructions outside the root element.
    private mutating func skipMisc() throws(ImportError) {
        while index < bytes.count {
            if SecurIDText.isSpace(bytes[index]) {
                index += 1
            } else if starts(with: "<!--") {
                try skipComment()
            } else if starts(with: "<?") {
                try skip(past: "?>", what: "processing instruction")
            } else {
                return
            }
        }
    }

    /// Parses an element whose `<` has been consumed.
    private mutating func element(depth: Int) throws(ImportError) -> SecurIDXMLElement {
        guard depth <= Self.maximumDepth else { throw error("elements nested deeper than \(Self.maximumDepth) levels") }
        elements += 1
        guard elements <= Self.maximumElements else { throw error("more than \(Self.maximumElements) elements") }
        var node = SecurIDXMLElement(name: try name())

        // Attributes: parsed for well-formedness, then ignored.
        while true {
            let hadSpace = skipSpace()
            guard let byte = peek() else { throw error("the file ends inside the <\(node.nameText)> tag") }
            if byte == UInt8(ascii: "/") {
                index += 1
                guard peek() == UInt8(ascii: ">") else { throw error("expected \">\" after \"/\"") }
                index += 1
                return node
            }
            if byte == UInt8(ascii: ">") {
                index += 1
                break
            }
            guard hadSpace else { throw error("expected whitespace before an attribute") }
            _ = try name()
            skipSpace()
            guard peek() == UInt8(ascii: "=") else { throw error("expected \"=\" after an attribute name") }
            index += 1
            skipSpace()
            guard let quote = peek(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
                throw error("expected a quoted attribute value")
            }
            index += 1
            while let next = peek(), next != quote {
                guard next != UInt8(ascii: "<") else { throw error("\"<\" inside an attribute value") }
                index += 1
            }
            guard peek() == quote else { throw error("the file ends inside an attribute value") }
            index += 1
        }

        // Content up to the matching end tag.
        while true {
            guard let byte = peek() else { throw error("the file ends inside <\(node.nameText)> (truncated?)") }
            if byte == UInt8(ascii: "<") {
                if starts(with: "</") {
                    index += 2
                    let closing = try name()
                    guard closing == node.name else {
                        throw error("</\(String(decoding: closing, as: UTF8.self))> does not close <\(node.nameText)>")
                    }
                    skipSpace()
                    guard peek() == UInt8(ascii: ">") else { throw error("expected \">\" to end </\(node.nameText)>") }
                    index += 1
                    return node
                } else if starts(with: "<!--") {
                    try skipComment()
                } else if starts(with: "<![CDATA[") {
                    index += 9
                    let start = index
                    try skip(past: "]]>", what: "CDATA section")
                    node.text += bytes[start..<(index - 3)]
                } else if starts(with: "<?") {
                    try skip(past: "?>", what: "processing instruction")
                } else if starts(with: "<!") {
                    throw error("unsupported markup declaration inside <\(node.nameText)>")
                } else {
                    index += 1
                    node.children.append(try element(depth: depth + 1))
                }
            } else if byte == UInt8(ascii: "&") {
                node.text += try reference()
            } else {
                node.text.append(byte)
                index += 1
            }
        }
    }

    /// An XML name (ASCII subset: letters, digits, `_ : - .`, not starting with a digit,
    /// `-` or `.`).
    private mutating func name() throws(ImportError) -> [UInt8] {
        let start = index
        while let byte = peek(), SecurIDText.isAlphanumeric(byte) || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") {
            index += 1
        }
        guard index > start else { throw error("expected an element or attribute name") }
        let first = bytes[start]
        guard !SecurIDText.isDigit(first), first != UInt8(ascii: "-"), first != UInt8(ascii: ".") else {
            throw error("a name cannot start with \"\(SecurIDText.printable([first]))\"")
        }
        return Array(bytes[start..<index])
    }

    /// `&…;` at the current position, decoded to UTF-8.
    private mutating func reference() throws(ImportError) -> [UInt8] {
        let start = index
        index += 1
        while let byte = peek(), byte != UInt8(ascii: ";") {
            guard index - start < 12 else { throw error("unterminated entity reference") }
            index += 1
        }
        guard peek() == UInt8(ascii: ";") else { throw error("unterminated entity reference") }
        let body = Array(bytes[(start + 1)..<index])
        index += 1
        switch String(decoding: body, as: UTF8.self) {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default: break
        }
        guard body.first == UInt8(ascii: "#"), body.count >= 2 else {
            throw error("unknown entity &\(SecurIDText.printable(body)); (only the five predefined ones are allowed)")
        }
        var value: UInt32 = 0
        let hex = body[1] == UInt8(ascii: "x")
        let digits = body[(hex ? 2 : 1)...]
        guard !digits.isEmpty else { throw error("empty character reference") }
        for byte in digits {
            let digit: UInt8?
            if hex { digit = SecurIDText.hexValue(byte) } else { digit = SecurIDText.isDigit(byte) ? byte - 0x30 : nil }
            guard let digit, value <= 0x10FFFF else { throw error("bad character reference &\(SecurIDText.printable(body));") }
            value = value * (hex ? 16 : 10) + UInt32(digit)
        }
        guard value != 0, let scalar = Unicode.Scalar(value) else {
            throw error("character reference &\(SecurIDText.printable(body)); is not a valid character")
        }
        return Array(String(Character(scalar)).utf8)
    }

    private mutating func skipComment() throws(ImportError) {
        index += 4
        try skip(past: "-->", what: "comment")
    }

    private mutating func skip(past terminator: String, what: String) throws(ImportError) {
        let pattern = Array(terminator.utf8)
        while index < bytes.count {
            if starts(with: pattern) {
                index += pattern.count
                return
            }
            index += 1
        }
        throw error("unterminated \(what) (truncated file?)")
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while let byte = peek(), SecurIDText.isSpace(byte) { index += 1 }
        return index > start
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private func starts(with text: String) -> Bool { starts(with: Array(text.utf8)) }

    private func starts(with pattern: [UInt8]) -> Bool {
        guard index + pattern.count <= bytes.count else { return false }
        for offset in 0..<pattern.count where bytes[index + offset] != pattern[offset] { return false }
        return true
    }

    private func error(_ message: String) -> ImportError {
        ImportError(.malformed, ".sdtid XML: \(message) (at byte \(min(index, bytes.count)))")
    }
}
