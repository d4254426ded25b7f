#if canImport(FoundationXML)
import FoundationXML
#endif
import Foundation

/// One element of a PSKC document. Elements and attributes are matched by local name: PSKC
/// files in the wild use every prefix and, for the PBKDF2 parameters, several namespaces.
final class PSKCNode {
    let name: String
    let namespace: String
    let attributes: [String: String]
    let line: Int
    fileprivate(set) var children: [PSKCNode] = []
    fileprivate var rawText = ""

    init(name: String, namespace: String, attributes: [String: String], line: Int) {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.line = line
    }

    /// Character content with surrounding whitespace removed.
    var text: String { rawText.trimmingCharacters(in: .whitespacesAndNewlines) }

    func child(_ name: String) -> PSKCNode? { children.first { $0.name == name } }
    func children(_ name: String) -> [PSKCNode] { children.filter { $0.name == name } }

    /// Follows child names, e.g. `node.path("Data", "Secret")`.
    func path(_ names: String...) -> PSKCNode? {
        var node: PSKCNode? = self
        for name in names { node = node?.child(name) }
        return node
    }

    func attribute(_ name: String) -> String? { attributes[name] }
}

/// Builds the `PSKCNode` tree with Foundation's SAX parser. Document type declarations have been
/// refused before (`TokenImporter.checkXMLIsSafe`); the builder aborts on any that slips through.
enum PSKCXML {
    static let maximumDepth = 48
    static let maximumElements = 50_000

    static func parse(_ bytes: [UInt8]) throws(ImportError) -> PSKCNode {
        try TokenImporter.checkXMLIsSafe(bytes)
        let document = try utf8Document(bytes)
        try refuseProcessingInstructions(document)
        let parser = XMLParser(data: Data(document))
        parser.shouldProcessNamespaces = true
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        let builder = TreeBuilder()
        parser.delegate = builder
        let parsed = parser.parse()
        if let failure = builder.failure { throw failure }
        guard parsed, let root = builder.root, builder.stack.isEmpty else {
            let code = (parser.parserError as NSError?)?.code
            let reason = code == nil || code == XMLParser.ErrorCode.prematureDocumentEndError.rawValue
                ? "the document ends early (truncated file?)"
                : "XML parser error \(code ?? 0)"
            throw ImportError(.malformed, "PSKC XML is not well-formed near line \(parser.lineNumber), column \(parser.columnNumber): \(reason)")
        }
        return root
    }

    /// The document in UTF-8, the only encoding XMLParser reads safely on Linux (found by
    /// fuzz/harnesses/pskc.swift): libxml2 hands names and comments in bytes that are not UTF-8
    /// on as they are, and XMLParser traps on them. A file that declares Latin-1 is converted
    /// here and loses its XML declaration, so libxml2 reads the result as UTF-8 — whether or not
    /// it would have understood the declaration.
    static func utf8Document(_ bytes: [UInt8]) throws(ImportError) -> [UInt8] {
        if String(validating: bytes, as: UTF8.self) != nil { return bytes }
        guard TokenImporter.declaresLatin1(bytes), let end = TokenImporter.find(bytes, "?>", from: 5) else {
            throw ImportError(.malformed, "PSKC XML is not valid UTF-8; convert the file to UTF-8 (or declare its real encoding)")
        }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.count + bytes.count / 8)
        for byte in bytes[(end + 2)...] {
            if byte < 0x80 {
                utf8.append(byte)
            } else {
                utf8 += [0xC0 | byte >> 6, 0x80 | byte & 0x3F]
            }
        }
        return utf8
    }

    /// XMLParser dereferences NULL on a processing instruction without data (found by
    /// fuzz/harnesses/pskc.swift). PSKC files have none, so any but the XML declaration at the
    /// start is refused.
    static func refuseProcessingInstructions(_ bytes: [UInt8]) throws(ImportError) {
        let declaration = TokenImporter.startsWith(bytes, at: 0, "<?xml") && bytes.count > 5 && TokenImporter.isWhitespace(bytes[5])
        if let instruction = TokenImporter.find(bytes, "<?", from: declaration ? 2 : 0) {
            let line = bytes[..<instruction].filter { $0 == UInt8(ascii: "\n") }.count + 1
            throw ImportError(.malformed, "PSKC XML has a processing instruction on line \(line); PSKC files have none but the XML declaration")
        }
    }

    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [PSKCNode] = []
        var root: PSKCNode?
        var failure: ImportError?
        private var count = 0

        private func fail(_ parser: XMLParser, _ error: ImportError) {
            if failure == nil { failure = error }
            parser.abortParsing()
        }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
            guard failure == nil else { return }
            count += 1
            guard count <= PSKCXML.maximumElements, stack.count < PSKCXML.maximumDepth else {
                fail(parser, ImportError(.malformed, "PSKC XML is nested too deeply or has too many elements"))
                return
            }
            guard root == nil || !stack.isEmpty else {
                fail(parser, ImportError(.malformed, "PSKC XML has content after its root element"))
                return
            }
            var attributes = [String: String]()
            for (name, value) in attributeDict { attributes[TokenImporter.localName(name)] = value }
            let node = PSKCNode(name: TokenImporter.localName(elementName), namespace: namespaceURI ?? "",
                                attributes: attributes, line: parser.lineNumber)
            if let parent = stack.last { parent.children.append(node) } else { root = node }
            stack.append(node)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            guard failure == nil else { return }
            _ = stack.popLast()
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            stack.last?.rawText += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            stack.last?.rawText += String(decoding: CDATABlock, as: UTF8.self)
        }

        func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
            fail(parser, ImportError(.malformed, "XML entity declarations are refused"))
        }

        func parser(_ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?) {
            fail(parser, ImportError(.malformed, "XML entity declarations are refused"))
        }

        func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
            fail(parser, ImportError(.malformed, "XML external entities are refused"))
            return nil
        }
    }
}
