import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// Format detection, size limit and garbage.
@Suite struct TokenImporterTests {
    nonisolated(unsafe) static let securID = (try? ImportVectors.json("securid.json")) ?? [:]

    @Test func oversizedInputIsRefusedBeforeParsing() throws {
        let uri = try #require(OTPAuthImportTests.uris.first?.string("uri"))
        var text = ""
        while text.utf8.count <= TokenImporter.maximumInputSize { text += uri + "\n" }
        let error = try #require(importError(text))
        #expect(error.code == .tooLarge)
        #expect(error.message.contains("1 MiB"))
        // Exactly at the limit is read (and here fails only because it is garbage).
        #expect(importError([UInt8](repeating: UInt8(ascii: "x"), count: TokenImporter.maximumInputSize))?.code == .unrecognized)
    }

    @Test(arguments: [
        "", "   \n\t\r\n", "# only a comment\n\n#another", "hello world", "12345",
        "JBSWY3DPEHPK3PXP", "http://example.com/?secret=JBSWY3DP", "{\"secret\": \"JBSWY3DP\"}",
    ])
    func garbageIsUnrecognized(text: String) throws {
        let error = try #require(importError(text))
        #expect(error.code == .unrecognized, "\(error)")
        #expect(error.message.contains("otpauth://") && error.message.contains("PSKC"), "\(error)")
    }

    @Test func binaryGarbageIsUnrecognized() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var bytes = (0..<Int.random(in: 1...4096)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if bytes[0] == UInt8(ascii: "<") { bytes[0] = 0 }
            let error = try #require(importError(bytes))
            #expect(error.code == .unrecognized || error.code == .malformed, "\(error)")
        }
    }

    @Test func unknownXMLIsUnrecognized() throws {
        let error = try #require(importError("<?xml version=\"1.0\"?>\n<!-- c -->\n<html><body/></html>"))
        #expect(error.code == .unrecognized)
        #expect(error.message.contains("<html>"))
        #expect(importError("<")?.code == .malformed)
        #expect(importError("<?xml version=\"1.0\"?>")?.code == .malformed)
    }

    @Test func xmlRootIsFoundPastPrologAndPrefixes() throws {
        let bytes = Array("\u{FEFF}<?xml version=\"1.0\"?>\n<!-- <TKNBatch> -->\n<?pi x?>\n<p:KeyContainer xmlns:p=\"u\">".utf8)
        #expect(try TokenImporter.rootElementName(Array(bytes.dropFirst(3))) == "p:KeyContainer")
        #expect(TokenImporter.localName("p:KeyContainer") == "KeyContainer")
    }

    /// SDTID files go to the SecurID reader (never "unrecognized"), whatever state it is in.
    @Test func sdtidIsRoutedToTheSecurIDReader() throws {
        let xml = try #require(Self.securID.table("tokens")?.table("A")?.string("sdtid_xml"))
        if let error = importError(xml) {
            #expect(error.code != .unrecognized, "\(error)")
        } else {
            #expect(try importText(xml).allSatisfy { $0.source == "sdtid" })
        }
    }

    /// Every CTF export in securid.json is recognised as CTF (in its URL, bare, percent-decoded).
    @Test func ctfStringsAreRecognised() throws {
        let exports = try #require(Self.securID.table("exports"))
        #expect(exports.count >= 5)
        for (name, value) in exports {
            let text = try #require((value as? [String: Any])?.string("string"))
            #expect(TokenImporter.looksLikeCTF(Array(text.utf8)), "\(name)")
            if let range = text.range(of: "ctfData=") {
                let bare = String(text[range.upperBound...])
                #expect(TokenImporter.looksLikeCTF(Array(bare.utf8)), "\(name) bare")
                let decoded = try #require(bare.removingPercentEncoding)
                #expect(TokenImporter.looksLikeCTF(Array(decoded.utf8)), "\(name) decoded")
            }
        }
        #expect(!TokenImporter.looksLikeCTF(Array(String(repeating: "1", count: 80).utf8)))
        #expect(!TokenImporter.looksLikeCTF(Array(String(repeating: "1", count: 86).utf8)))
        #expect(!TokenImporter.looksLikeCTF(Array(("A" + String(repeating: "b", count: 386)).utf8)))
        #expect(!TokenImporter.looksLikeCTF(Array(("C" + String(repeating: "b", count: 387)).utf8)))
    }

    /// CTF lines go to the SecurID reader (never "unrecognized"), and errors name the line.
    @Test func ctfIsRoutedToTheSecurIDReader() throws {
        let exports = try #require(Self.securID.table("exports"))
        let text = try #require((exports["A-v2"] as? [String: Any])?.string("string"))
        if let error = importError("# token A\n" + text) {
            #expect(error.code != .unrecognized, "\(error)")
            #expect(error.message.hasPrefix("line 2: "), "\(error)")
        } else {
            #expect(try importText(text).allSatisfy { $0.source == "ctf" })
        }
    }

    @Test func base64DecoderAcceptsBothAlphabetsAndRejectsJunk() throws {
        let all = (0...255).map { UInt8($0) }
        let standard = Data(all).base64EncodedString()
        #expect(TokenImporter.Base64.decode(Array(standard.utf8)) == all)
        let wrapped = Data(all).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        #expect(TokenImporter.Base64.decode(Array(wrapped.utf8)) == all)
        let urlSafe = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(TokenImporter.Base64.decode(Array(urlSafe.utf8), urlSafe: true) == all)
        #expect(TokenImporter.Base64.decode(Array(urlSafe.utf8)) == nil)
        for bad in ["A", "AB=C", "ABC==", "AB===", "A*BC", "AB=CD=="] {
            #expect(TokenImporter.Base64.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(TokenImporter.Base64.decodeSecret(Array("MTIz".utf8))?.withUnsafeBytes { Array($0) } == Array("123".utf8))
    }

    @Test func pskcDatesParse() {
        #expect(PSKCDateTime.unixTime("1970-01-01T00:00:00Z") == 0)
        #expect(PSKCDateTime.unixTime("2035-12-31T00:00:00Z") == 2_082_672_000)
        #expect(PSKCDateTime.unixTime("2000-02-29T12:30:15.250+01:30") == 951_822_015)
        #expect(PSKCDateTime.unixTime("2024-02-29") == 1_709_164_800)
        #expect(PSKCDateTime.unixTime("1969-12-31T23:59:59") == -1)
        for bad in ["2023-02-29T00:00:00Z", "2035-12-31 00:00:00", "2035-12-31T25:00:00Z", "35-12-31", "2035-12-31T00:00:00Zjunk"] {
            #expect(PSKCDateTime.unixTime(bad) == nil, "\(bad)")
        }
        #expect(PSKCDateTime.format(2_082_672_000) == "2035-12-31 00:00:00 UTC")
        #expect(PSKCDateTime.format(951_822_015) == "2000-02-29 11:00:15 UTC")
    }
}
