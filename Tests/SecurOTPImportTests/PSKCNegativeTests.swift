import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// Files securotp must refuse, and why: wrong or missing keys, altered values, XML tricks,
/// algorithms it does not implement, expired keys.
@Suite struct PSKCNegativeTests {
    static func file(_ name: String) throws -> String { try ImportVectors.text("pskc/" + name) }
    static func vector(_ name: String) throws -> [String: Any] { try PSKCVectorTests.vector(name) }

    /// Changes one base64 character inside the `occurrence`-th element whose local name is
    /// `element` (a different valid character, so only the bytes change, not the encoding).
    static func tamper(_ text: String, element: String, occurrence: Int, at offset: Int = 6) throws -> String {
        // Opening tags only: "</x:ValueMAC>" does not match because of its slash.
        let expression = try NSRegularExpression(pattern: "<(?:[A-Za-z0-9]+:)?\(element)[^>]*>")
        let matches = expression.matches(in: text, range: NSRange(text.startIndex..., in: text))
        let match = try #require(matches.count > occurrence ? matches[occurrence] : nil)
        var characters = Array(text.utf16)
        var index = match.range.upperBound
        while characters[index] == 0x20 || characters[index] == 0x0A { index += 1 }
        index += offset
        characters[index] = characters[index] == UInt16(UInt8(ascii: "A")) ? UInt16(UInt8(ascii: "B")) : UInt16(UInt8(ascii: "A"))
        return String(decoding: characters, as: UTF16.self)
    }

    // MARK: keys and passwords

    @Test func wrongPasswordIsRefused() throws {
        for name in ["pbkdf2-aes128cbc.pskcxml", "figure7.pskcxml"] {
            let error = try #require(importError(try Self.file(name), options(password: "qwertz")))
            #expect(error.code == .password || error.code == .checksum, "\(name): \(error)")
            #expect(error.message.contains("password"), "\(name): \(error)")
        }
    }

    @Test func missingPasswordIsRequested() throws {
        let error = try #require(importError(try Self.file("figure7.pskcxml"), options()))
        #expect(error.code == .password)
        #expect(error.message.contains("password"))
        #expect(error.message.contains("My Password 1"))
    }

    @Test func wrongTransportKeyIsRefused() throws {
        for name in ["psk-aes128cbc.pskcxml", "figure6.pskcxml"] {
            let error = try #require(importError(try Self.file(name), options(transportKeyHex: "00112233445566778899aabbccddeeff")))
            #expect(error.code == .password || error.code == .checksum, "\(name): \(error)")
            #expect(error.message.contains("transport key"), "\(name): \(error)")
        }
    }

    @Test func missingOrShortTransportKeyIsRequested() throws {
        let missing = try #require(importError(try Self.file("figure6.pskcxml"), options()))
        #expect(missing.code == .password)
        #expect(missing.message.contains("Pre-shared-key"))
        let short = try #require(importError(try Self.file("figure6.pskcxml"), options(transportKeyHex: "0011223344")))
        #expect(short.code == .password)
        #expect(short.message.contains("16-byte"))
    }

    // MARK: altered values

    @Test(arguments: ["psk-aes128cbc.pskcxml", "pbkdf2-aes128cbc.pskcxml", "figure6.pskcxml", "figure7.pskcxml"])
    func alteredValueMACIsRefused(name: String) throws {
        let vector = try Self.vector(name)
        let text = try Self.tamper(try Self.file(name), element: "ValueMAC", occurrence: 0)
        let error = try #require(importError(text, PSKCVectorTests.options(for: vector)))
        #expect(error.code == .checksum, "\(error)")
        #expect(error.message.contains("ValueMAC"))
    }

    /// The secret's CipherValue is the second one in the file (the MACKey's comes first).
    @Test(arguments: ["psk-aes128cbc.pskcxml", "pbkdf2-aes128cbc.pskcxml", "figure6.pskcxml", "figure7.pskcxml"])
    func alteredCiphertextIsRefused(name: String) throws {
        let vector = try Self.vector(name)
        for offset in [3, 30] { // in the IV, in the ciphertext
            let text = try Self.tamper(try Self.file(name), element: "CipherValue", occurrence: 1, at: offset)
            let error = try #require(importError(text, PSKCVectorTests.options(for: vector)))
            #expect(error.code == .checksum, "\(error)")
        }
    }

    @Test func alteredMACKeyIsRefused() throws {
        let vector = try Self.vector("psk-aes128cbc.pskcxml")
        let text = try Self.tamper(try Self.file("psk-aes128cbc.pskcxml"), element: "CipherValue", occurrence: 0, at: 40)
        let error = try #require(importError(text, PSKCVectorTests.options(for: vector)))
        #expect(error.code == .password || error.code == .checksum, "\(error)")
    }

    @Test func cbcWithoutValueMACIsRefused() throws {
        let vector = try Self.vector("psk-aes128cbc.pskcxml")
        let text = try Self.file("psk-aes128cbc.pskcxml")
            .replacingOccurrences(of: #"<pskc:ValueMAC>[^<]*</pskc:ValueMAC>"#, with: "", options: .regularExpression)
        let error = try #require(importError(text, PSKCVectorTests.options(for: vector)))
        #expect(error.code == .malformed)
        #expect(error.message.contains("ValueMAC"))
    }

    // MARK: XML

    @Test(arguments: [0.25, 0.5, 0.9, 0.99])
    func truncatedXMLIsRefused(fraction: Double) throws {
        let bytes = try ImportVectors.bytes("pskc/plain.pskcxml")
        let error = try #require(importError(Array(bytes.prefix(Int(Double(bytes.count) * fraction)))))
        #expect(error.code == .malformed, "\(error)")
    }

    static let entityAttacks = [
        // Billion laughs.
        """
        <?xml version="1.0"?>
        <!DOCTYPE KeyContainer [
          <!ENTITY lol "lol">
          <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
          <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
          <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
        ]>
        <KeyContainer Version="1.0" xmlns="urn:ietf:params:xml:ns:keyprov:pskc"><KeyPackage><Key><Issuer>&lol3;</Issuer></Key></KeyPackage></KeyContainer>
        """,
        // External entity.
        """
        <?xml version="1.0"?>
        <!DOCTYPE KeyContainer [ <!ENTITY secret SYSTEM "file:///etc/passwd"> ]>
        <KeyContainer Version="1.0" xmlns="urn:ietf:params:xml:ns:keyprov:pskc"><KeyPackage><Key><Issuer>&secret;</Issuer></Key></KeyPackage></KeyContainer>
        """,
        // A doctype without entities, lower case, and an entity declaration smuggled in a comment.
        #"<?xml version="1.0"?><!doctype KeyContainer><KeyContainer Version="1.0"/>"#,
        #"<KeyContainer Version="1.0"><!-- <!ENTITY x "y"> --></KeyContainer>"#,
        // Root detection must not be fooled either.
        #"<!DOCTYPE TKNBatch [<!ENTITY a "b">]><TKNBatch>&a;</TKNBatch>"#,
    ]

    @Test(arguments: PSKCNegativeTests.entityAttacks.indices)
    func documentTypeDeclarationsAreRefused(index: Int) throws {
        let error = try #require(importError(Self.entityAttacks[index]))
        #expect(error.code == .malformed)
        #expect(error.message.contains("document type declaration"))
    }

    @Test func deepNestingIsRefused() throws {
        let depth = 200
        let text = "<KeyContainer Version=\"1.0\">" + String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
            + "</KeyContainer>"
        let error = try #require(importError(text))
        #expect(error.code == .malformed)
        #expect(error.message.contains("nested too deeply"))
    }

    @Test func nonUTF8EncodingsAreRefused() throws {
        var utf16 = [UInt8]([0xFF, 0xFE])
        for unit in try Self.file("plain.pskcxml").utf16 { utf16 += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        #expect(importError(utf16)?.code != nil)
        let ebcdic = try Self.file("plain.pskcxml").replacingOccurrences(of: "encoding=\"UTF-8\"", with: "encoding=\"EBCDIC-US\"")
        #expect(importError(ebcdic)?.code == .unsupported)
    }

    /// Found by fuzz/harnesses/pskc.swift: Foundation's XMLParser trapped (SIGILL, killing
    /// `securotp import`) on an element name that is not UTF-8, and crashed on a processing
    /// instruction without data. Both are refused first; Latin-1 files still import.
    @Test func inputThatCrashesXMLParserIsRefused() throws {
        let open = Array(#"<?xml version="1.0" encoding="UTF-8"?><KeyContainer Version="1.0">"#.utf8)
        let close = Array("</KeyContainer>".utf8)
        for inside: [UInt8] in [[0x3C, 0xE1, 0x2D, 0x2D, 0x2F, 0x3E], [0x3C, 0x61, 0x20, 0xFF, 0x3D, 0x22, 0x22, 0x2F, 0x3E]] {
            let error = try #require(importError(open + inside + close))
            #expect(error.code == .malformed, "\(error)")
            #expect(error.message.contains("UTF-8"), "\(error)")
        }
        // Processing instructions without data made XMLParser dereference NULL (SIGSEGV).
        for text in [#"<?xml?><KeyContainer Version="1.0"/>"#, #"<KeyContainer Version="1.0"><?pi?></KeyContainer>"#,
                     #"<?xml version="1.0"?><KeyContainer Version="1.0"><?pi x?></KeyContainer>"#] {
            let error = try #require(importError(text))
            #expect(error.code == .malformed && error.message.contains("processing instruction"), "\(error)")
        }
        let plain = try Self.file("plain.pskcxml")
        let latin1 = plain.replacingOccurrences(of: "encoding=\"UTF-8\"", with: "encoding=\"ISO-8859-1\"")
            .replacingOccurrences(of: "</KeyContainer>", with: "<!-- \u{E9} --></KeyContainer>")
        #expect(latin1 != plain)
        let bytes = latin1.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
        #expect(try TokenImporter.parse(bytes, options: options()).count == 2)
        // A declaration libxml2 cannot read leaves it reading UTF-8: the Latin-1 bytes are
        // converted whatever the declaration looks like.
        let garbled = Array(#"<?xml verl version="1.0" encoding="ISO-8859-1"?><KeyContainer Version="1.0"><!-- "#.utf8)
            + [0xE9] + Array(" --></KeyContainer>".utf8)
        #expect(importError(garbled)?.code == .malformed)
    }

    @Test func containerWithoutKeysIsRefused() {
        let error = importError(#"<KeyContainer Version="1.0" xmlns="urn:ietf:params:xml:ns:keyprov:pskc"/>"#)
        #expect(error?.code == .malformed)
        #expect(importError(#"<KeyContainer Version="2.0" xmlns="urn:ietf:params:xml:ns:keyprov:pskc"><KeyPackage/></KeyContainer>"#)?.code == .unsupported)
    }

    // MARK: algorithms and parameters securotp does not implement

    /// Each replacement in plain.pskcxml must fail with the given code, naming the key.
    static let unsupportedEdits: [(String, String, ImportError.Code)] = [
        ("urn:ietf:params:xml:ns:keyprov:pskc:hotp", "urn:ietf:params:xml:ns:keyprov:pskc#OCRA-1:HOTP-SHA1-6:QN08", .unsupported),
        ("urn:ietf:params:xml:ns:keyprov:pskc:totp", "http://www.rsa.com/names/2008/04/algorithms/SecurID#SecurID-AES", .unsupported),
        ("urn:ietf:params:xml:ns:keyprov:pskc:hotp", "urn:example:made-up", .unsupported),
        ("<pskc:Suite>HMAC-SHA256</pskc:Suite>", "<pskc:Suite>HMAC-MD5</pskc:Suite>", .unsupported),
        (#"Encoding="DECIMAL" Length="6""#, #"Encoding="HEXADECIMAL" Length="6""#, .unsupported),
        (#"Encoding="DECIMAL" Length="6""#, #"Encoding="DECIMAL" Length="9""#, .unsupported),
        (#"Encoding="DECIMAL" Length="6""#, #"Encoding="DECIMAL""#, .malformed),
        ("<pskc:PlainValue>30</pskc:PlainValue>", "<pskc:PlainValue>3600</pskc:PlainValue>", .unsupported),
        ("<pskc:Time>\n     <pskc:PlainValue>0</pskc:PlainValue>", "<pskc:Time>\n     <pskc:PlainValue>5</pskc:PlainValue>", .unsupported),
        ("<pskc:Counter>\n     <pskc:PlainValue>0</pskc:PlainValue>", "<pskc:Counter>\n     <pskc:PlainValue>-1</pskc:PlainValue>", .malformed),
        ("<pskc:Counter>\n     <pskc:PlainValue>0</pskc:PlainValue>", "<pskc:Counter>\n     <pskc:PlainValue>zero</pskc:PlainValue>", .malformed),
        ("MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=", "MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=!", .malformed),
        ("2035-12-31T00:00:00Z", "2035-13-31T00:00:00Z", .malformed),
        ("2035-12-31T00:00:00Z", "2020-12-31T00:00:00+02:00", .expired),
    ]

    @Test(arguments: PSKCNegativeTests.unsupportedEdits.indices)
    func refusesWhatItCannotImport(index: Int) throws {
        let (old, new, code) = Self.unsupportedEdits[index]
        let original = try Self.file("plain.pskcxml")
        try #require(original.contains(old))
        let error = try #require(importError(original.replacingOccurrences(of: old, with: new)))
        #expect(error.code == code, "\(error)")
        #expect(error.message.contains("PSKC key \""), "\(error)")
    }

    @Test func unsupportedEncryptionIsRefused() throws {
        let vector = try Self.vector("psk-aes128cbc.pskcxml")
        let original = try Self.file("psk-aes128cbc.pskcxml")
        let edits: [(String, String)] = [
            ("xmlenc#aes128-cbc", "xmlenc#tripledes-cbc"),
            ("xmldsig#hmac-sha1", "xmldsig-more#hmac-md5"),
            ("<ds:KeyName>Pre-shared-key</ds:KeyName>", "<ds:X509Data><ds:X509Certificate>MIIB</ds:X509Certificate></ds:X509Data>"),
        ]
        for (old, new) in edits {
            try #require(original.contains(old))
            let error = importError(original.replacingOccurrences(of: old, with: new), PSKCVectorTests.options(for: vector))
            #expect(error?.code == .unsupported, "\(old): \(String(describing: error))")
        }
        let pbkdf2 = try Self.file("pbkdf2-aes128cbc.pskcxml")
        let scrypt = pbkdf2.replacingOccurrences(of: "pkcs-5v2-0#pbkdf2", with: "pkcs-5v2-0#scrypt")
        #expect(importError(scrypt, options(password: "qwerty"))?.code == .unsupported)
    }

    /// All or nothing: a bad second key fails the whole file, even though the first is fine.
    @Test func oneBadKeyFailsTheFile() throws {
        let text = try Self.file("plain.pskcxml").replacingOccurrences(of: "<pskc:Suite>HMAC-SHA256</pskc:Suite>", with: "<pskc:Suite>MD5</pskc:Suite>")
        let error = try #require(importError(text))
        #expect(error.message.contains("TOTP-0001"))
        #expect(error.message.contains("KeyPackage 2"))
    }
}
