import Foundation
import SecurOTPCore
import Testing

/// One list of the API's paths (`APIPath`, Sources/SecurOTPCore/APIPath.swift): the document's,
/// the routes' (OpenAPITests compares those with the document) and the clients'.
@Suite("APIPath: the one list of the API's paths")
struct APIPathTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("APIPath.all is docs/api/openapi.yaml's paths, each once")
    func listIsTheDocument() throws {
        let templates = APIPath.all.map(\.template)
        #expect(Set(templates).count == templates.count, "a path listed twice: \(templates)")
        let documented = Set(try OpenAPIDocument.shared.operations().keys.map(\.path))
        #expect(Set(templates) == documented,
                "listed, not documented: \(Set(templates).subtracting(documented)); documented, not listed: \(documented.subtracting(templates))")
    }

    /// `/v1/…` string literals in a text: Swift's quote, or JavaScript's three (a backtick in
    /// Swift is a doc comment's code span, not a literal).
    static func pathLiterals(_ text: String, quotes: [String] = ["\""]) -> [String] {
        var found: [String] = []
        for quote in quotes {
            for piece in text.components(separatedBy: quote + "/v1/").dropFirst() {
                found.append("/v1/" + piece.prefix { $0 != Character(quote) && $0 != "?" && $0 != "\n" })
            }
        }
        return found
    }

    @Test("No source spells a /v1/ path but APIPath; the phone page's paths are in the list")
    func clientsUseTheList() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let walker = try #require(FileManager.default.enumerator(atPath: sources.path))
        var spelled: [String] = []
        var scanned = 0
        for case let relative as String in walker where relative.hasSuffix(".swift") {
            // APIPath.swift is the list; WebAppFiles.swift is webapp/ embedded, checked below.
            guard !relative.hasSuffix("SecurOTPCore/APIPath.swift"), !relative.hasSuffix("SecurOTPServer/WebAppFiles.swift") else { continue }
            scanned += 1
            let text = try String(contentsOf: sources.appendingPathComponent(relative), encoding: .utf8)
            spelled += Self.pathLiterals(text).map { "\(relative): \($0)" }
        }
        #expect(scanned > 200)
        #expect(spelled.isEmpty, "paths spelled outside APIPath: \(spelled)")

        let page = try String(contentsOf: Self.root.appendingPathComponent("webapp/app.js"), encoding: .utf8)
        let used = Self.pathLiterals(page, quotes: ["\"", "'", "`"])
        #expect(used.count >= 5, "the scan found \(used) in webapp/app.js")
        let listed = Set(APIPath.all.map(\.template))
        #expect(used.filter { !listed.contains($0) }.isEmpty, "webapp/app.js calls paths APIPath does not list: \(used.filter { !listed.contains($0) })")
    }

    @Test("The scan finds a spelled path in Swift and JavaScript quoting, without its query")
    func scanSeesLiterals() {
        #expect(Self.pathLiterals(#"call("GET", "/v1/tokens?user=x")"#) == ["/v1/tokens"])
        #expect(Self.pathLiterals("fetch('/v1/web/session', {})", quotes: ["'"]) == ["/v1/web/session"])
        #expect(Self.pathLiterals("/// `/v1/verify` in a comment").isEmpty)
    }
}
