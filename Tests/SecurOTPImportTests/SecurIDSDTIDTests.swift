import Foundation
import Testing
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

@Suite struct SecurIDSDTIDTests {
    typealias F = SecurIDFixtures

    static func xml(_ letter: String) throws -> String {
        try #require(F.token(letter)?["sdtid_xml"] as? String, "token \(letter) has no sdtid_xml in securid.json")
    }

    static func password(_ letter: String) -> String? { F.token(letter)?["sdtid_password"] as? String }

    // MARK: Tokens A (no password) and B (password, non-default Origin/Dest/Name)

    @Test(arguments: ["A", "B"])
    func decodesVectorFile(letter: String) throws {
        let tokens = try SecurIDSDTID.decode(Array(try Self.xml(letter).utf8), options: F.options(password: Self.password(letter)))
        #expect(tokens.count == 1)
        let token = try #require(tokens.first)
        try F.expectMatches(token, letter: letter, source: "sdtid")
        #expect(token.account == nil)   // <UserLogin> is blank
    }

    static let sdtidVectorIDs: [String] = F.vectors
        .filter { $0["kind"] as? String == "sdtid" }.compactMap { $0["id"] as? String }

    @Test(arguments: SecurIDSDTIDTests.sdtidVectorIDs)
    func sdtidTokencodeVector(id: String) throws {
        let vector = try #require(F.vector(id: id))
        let letter = String(id.prefix(1))
        let time = Int64(try #require(vector["time"] as? Int))
        let imported = try #require(try SecurIDSDTID.decode(Array(try Self.xml(letter).utf8),
                                                            options: F.options(password: vector["password"] as? String)).first)
        let token = try #require(F.securID(imported))
        let pin = Array(try #require(vector["pin"] as? String).utf8)
        #expect(token.passcode(at: time, pin: pin) == Array(try #require(vector["tokencode"] as? String).utf8))
    }

    @Test func passwordHandling() throws {
        let b = Array(try Self.xml("B").utf8)
        #expect(F.sdtidError(b, F.options())?.code == .password)
        #expect(F.sdtidError(b, F.options(password: "Tr0ub4dor&4"))?.code == .password)
        #expect(F.sdtidError(b, F.options(password: " Tr0ub4dor&3"))?.code == .password)   // passwords are not trimmed
        // A file without a password ignores one given anyway (it is unlocked with Origin).
        let a = Array(try Self.xml("A").utf8)
        #expect(F.sdtidError(a, F.options(password: "irrelevant")) == nil)
    }

    // MARK: Step by step (intermediates.sdtid_B)

    @Test func keysAndMACInputStepByStep() throws {
        let steps = try #require(F.intermediates["sdtid_B"] as? [String: Any])
        let root = try SecurIDXML.parse(Array(try Self.xml("B").utf8))
        let header = try #require(root.children.first { $0.isNamed("TKNHeader") })
        let token = try #require(root.children.first { $0.isNamed("TKN") })

        let headerInput = SecurIDSDTID.macInput(header)
        #expect(headerInput.count == steps["header_serialization_len"] as? Int)
        #expect(Hex.encode(headerInput) == steps["header_serialization_hex"] as? String)
        let tokenInput = SecurIDSDTID.macInput(token)
        #expect(tokenInput.count == steps["token_serialization_len"] as? Int)
        #expect(Hex.encode(tokenInput) == steps["token_serialization_hex"] as? String)

        let batch = try SecurIDSDTID.Batch(header: header)
        let keys = try SecurIDSDTID.derive(batch: batch, tokens: [token],
                                           passwordOrOrigin: Array(try #require(Self.password("B")).utf8))
        #expect(Hex.encode(keys.batchMAC) == steps["batch_mac_key"] as? String)
        #expect(Hex.encode(keys.tokens[0].mac) == steps["token_mac_key"] as? String)
        #expect(Hex.encode(keys.tokens[0].encryption) == steps["token_enc_key"] as? String)
        let serial = try SecurIDSDTID.serialText(of: token)
        let block = SecurIDCrypto.encryptBlock(key: keys.tokens[0].encryption,
                                               SecurIDSDTID.fixed(serial, 8) + Array("Seed".utf8) + [0, 0, 0, 0])
        #expect(Hex.encode(block) == steps["seed_keystream_block"] as? String)
    }

    // MARK: Tampering

    @Test func editedFieldsAreDetected() throws {
        let a = try Self.xml("A")
        let b = try Self.xml("B")
        let pb = F.options(password: Self.password("B"))
        let edits: [(String, String, String, ImportOptions)] = [
            (a, "<UserLogin> </UserLogin>", "<UserLogin>mallory</UserLogin>", F.options()),
            (a, "<DefDigits>6</DefDigits>", "<DefDigits>8</DefDigits>", F.options()),
            (a, "<DefDeath>2035/12/31</DefDeath>", "<DefDeath>2099/12/31</DefDeath>", F.options()),
            (a, "<DefAddPIN>1</DefAddPIN>", "<DefAddPIN>0</DefAddPIN>", F.options()),
            (a, "<Nickname> </Nickname>", "<Nickname/>", F.options()),
            (a, "<SN>987654321098</SN>", "<SN>987654321099</SN>", F.options()),
            (b, "a01c4380-fc01-4df0-b113-7fb98ec74694", "556f1985-33dd-442c-9155-3a0e994f21b1", pb),
            (b, "<Seed>=snZebJl", "<Seed>=snZebJk", pb),
            (b, "<HeaderMAC>S9A8mQmvB907kuXjDn2T1Q==", "<HeaderMAC>S9A8mQmvB907kuXjDn2T1A==", pb),
            (a, "  </TKN>", "    <Digits>8</Digits>\n  </TKN>", F.options()),
        ]
        for (xml, original, replacement, options) in edits {
            #expect(xml.contains(original), "fixture changed: \(original)")
            let edited = xml.replacingOccurrences(of: original, with: replacement)
            let error = F.sdtidError(edited, options)
            #expect(error?.code == .checksum, "\(original) → \(replacement): \(error?.message ?? "accepted")")
        }
        // Both MACs wrong reads as a wrong password.
        let both = b.replacingOccurrences(of: "<Name>Batch-0001</Name>", with: "<Name>Batch-0002</Name>")
        #expect(F.sdtidError(both, pb)?.code == .password)
        // The trailer is outside the MACs.
        let trailer = a.replacingOccurrences(of: "<BatchSignature> </BatchSignature>", with: "<BatchSignature>AAAA</BatchSignature>")
        #expect(F.sdtidError(trailer, F.options()) == nil)
    }

    @Test func truncatedFilesAreRejected() throws {
        let text = try Self.xml("B")
        let xml = Array(text.utf8)
        let end = try #require(text.range(of: "</TKNBatch>"))
        let complete = text.utf8.distance(from: text.startIndex, to: end.upperBound)
        let options = F.options(password: Self.password("B"))
        for length in stride(from: 0, to: complete, by: 3) {
            let error = F.sdtidError(Array(xml.prefix(length)), options)
            #expect(error?.code == .malformed, "cut at \(length): \(error?.message ?? "accepted")")
        }
        #expect(F.sdtidError(Array(xml.prefix(complete)), options) == nil)
    }

    @Test func sizeLimit() throws {
        let xml = Array(try Self.xml("A").utf8)
        let limit = SecurIDSDTID.maximumSize
        let exactly = xml + [UInt8](repeating: UInt8(ascii: " "), count: limit - xml.count)
        #expect(F.sdtidError(exactly, F.options()) == nil)
        let error = F.sdtidError(exactly + [UInt8(ascii: "\n")], F.options())
        #expect(error?.code == .tooLarge)
        let comment = Array("<!--".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 2 * limit) + Array("-->".utf8)
        #expect(F.sdtidError(comment + xml, F.options())?.code == .tooLarge)
    }

    @Test func noDTDsOrEntities() throws {
        let a = try Self.xml("A")
        let prolog = "<?xml version=\"1.0\"?>\n"
        let body = a.replacingOccurrences(of: prolog, with: "")
        let attacks = [
            prolog + "<!DOCTYPE TKNBatch>\n" + body,
            prolog + "<!doctype TKNBatch>\n" + body,
            prolog + "<!DOCTYPE TKNBatch [<!ENTITY o \"N/A\">]>\n" + body.replacingOccurrences(of: "<Origin>N/A", with: "<Origin>&o;"),
            prolog + "<!DOCTYPE TKNBatch [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>\n"
                + body.replacingOccurrences(of: "<Dest>N/A", with: "<Dest>&xxe;"),
            prolog + "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;\">]>\n"
                + body.replacingOccurrences(of: "<Name>N/A", with: "<Name>&lol2;"),
            a.replacingOccurrences(of: "<Origin>N/A", with: "<Origin>&unknown;"),
            a.replacingOccurrences(of: "<Origin>N/A", with: "<Origin>&#0;"),
            a.replacingOccurrences(of: "<Origin>N/A", with: "<Origin>&#xD800;"),
            a.replacingOccurrences(of: "<Origin>N/A", with: "<Origin><!ENTITY x \"y\">"),
        ]
        for attack in attacks {
            let error = F.sdtidError(attack, F.options())
            #expect(error?.code == .malformed, "\(error?.message ?? "accepted")")
        }
        #expect(F.sdtidError(prolog + "<!DOCTYPE TKNBatch>\n" + body, F.options())?.message.contains("DOCTYPE") == true)
    }

    @Test func xmlDetailsThatDoNotChangeTheMACs() throws {
        let a = try Self.xml("A")
        // Comments, empty CDATA, character references for the same text, attributes and a BOM.
        let variants = [
            a.replacingOccurrences(of: "<UserLogin> </UserLogin>", with: "<!-- note --><UserLogin> </UserLogin>"),
            a.replacingOccurrences(of: "<Seed>", with: "<Seed><![CDATA[]]>"),
            a.replacingOccurrences(of: "<Origin>N/A</Origin>", with: "<Origin>N&#47;A</Origin>"),
            a.replacingOccurrences(of: "<Origin>N/A</Origin>", with: "<Origin>N&#x2F;A</Origin>"),
            a.replacingOccurrences(of: "<TKNBatch>", with: "<TKNBatch xmlns:x='urn:x' version=\"1\" >"),
            "\u{FEFF}" + a,
            a.replacingOccurrences(of: "</TKNBatch>\n", with: "</TKNBatch>\n<!-- end -->\n<?pi x?>\n"),
        ]
        for variant in variants {
            #expect(F.sdtidError(variant, F.options()) == nil, "\(F.sdtidError(variant, F.options())?.message ?? "")")
        }
    }

    @Test func structuralErrors() throws {
        let a = try Self.xml("A")
        let cases: [(String, ImportError.Code)] = [
            ("", .malformed),
            ("<?xml version=\"1.0\"?>", .malformed),
            ("<KeyContainer/>", .unrecognized),
            ("<TKNBatch></TKNBatch>", .malformed),
            (a.replacingOccurrences(of: "<TKN>", with: "<TKNx>").replacingOccurrences(of: "</TKN>", with: "</TKNx>"), .malformed),
            (a.replacingOccurrences(of: "</TKNHeader>", with: "</TKNHeader><TKNHeader></TKNHeader>"), .malformed),
            (a.replacingOccurrences(of: "</UserLogin>", with: "</UserLogon>"), .malformed),
            (a + "<extra/>", .malformed),
            (a.replacingOccurrences(of: "<SN>987654321098</SN>", with: "<SN>98765432109x</SN>"), .malformed),
            (a.replacingOccurrences(of: "<SN>987654321098</SN>", with: "<SN>9876543210987</SN>"), .malformed),
            (a.replacingOccurrences(of: "<SN>987654321098</SN>", with: ""), .malformed),
            (a.replacingOccurrences(of: "<Secret>AAECAwQFBgcICQoLDA0ODw==</Secret>", with: "<Secret>AAEC</Secret>"), .malformed),
            (a.replacingOccurrences(of: "<Seed>=FbTIHvd5CmJW12iiKZXPZw==</Seed>", with: "<Seed>=FbTIHvd5CmJW12ii</Seed>"), .malformed),
            (a.replacingOccurrences(of: "<TokenMAC>1iQcOuz+KHnE9dAU2pRdRg==</TokenMAC>", with: ""), .malformed),
            (a.replacingOccurrences(of: "<DefDigits>6</DefDigits>", with: "<DefDigits>six</DefDigits>"), .malformed),
            (a.replacingOccurrences(of: "<DefDeath>2035/12/31</DefDeath>", with: "<DefDeath>2035/02/30</DefDeath>"), .malformed),
            (a.replacingOccurrences(of: "<DefDeath>2035/12/31</DefDeath>", with: ""), .malformed),
            (a.replacingOccurrences(of: "<DefAlg>1</DefAlg>", with: "<DefAlg>0</DefAlg>"), .unsupported),
            (a.replacingOccurrences(of: "<DefDigits>6</DefDigits>", with: "<DefDigits>12</DefDigits>"), .unsupported),
            (String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40), .malformed),
        ]
        for (xml, code) in cases {
            let error = F.sdtidError(xml, F.options())
            #expect(error?.code == code, "\(error?.message ?? "accepted") for \(xml.prefix(60))")
        }
    }

    @Test func expiry() throws {
        let a = Array(try Self.xml("A").utf8)
        let entry = try #require(F.token("A"))
        let firstExpired = try #require((entry["stoken_show_expiration"] as? String).flatMap(F.unixTime(ofDate:)))
        #expect(F.sdtidError(a, F.options(now: firstExpired - 1)) == nil)
        let error = F.sdtidError(a, F.options(now: firstExpired))
        #expect(error?.code == .expired)
        #expect(error?.message.contains("2035-12-31") == true, "\(error?.message ?? "")")
    }

    @Test func integerAndDateFields() {
        func int(_ text: String) -> Int? { SecurIDSDTID.integer(Array(text.utf8)) }
        #expect(int("60") == 60 && int("0x3c") == 60 && int("074") == 60 && int("-1") == -1 && int("+6") == 6 && int("0") == 0)
        #expect(int("") == nil && int("6a") == nil && int("08") == nil && int("0x") == nil && int("99999999999") == nil)
        #expect(SecurIDSDTID.date(Array("2000/01/01".utf8)) == 0)
        #expect(SecurIDSDTID.date(Array("2035/12/31".utf8)) == SecurIDParameters.day(year: 2035, month: 12, day: 31))
        #expect(SecurIDSDTID.date(Array("2035-12-31".utf8)) == nil)
        #expect(SecurIDSDTID.date(Array("2035/12/".utf8)) == nil)
        #expect(SecurIDSDTID.date(Array("99999/1/1".utf8)) == nil)
    }

    /// A batch of two tokens, the second with a short serial, built with our own key
    /// derivation on top of token A's file (stoken writes one token per file).
    @Test func batchOfTwoTokens() throws {
        let a = try Self.xml("A")
        let shortSerial = "4455667788"
        let seed: [UInt8] = Array(0x40..<0x50)
        let root = try SecurIDXML.parse(Array(a.utf8))
        let header = try #require(root.children.first { $0.isNamed("TKNHeader") })
        let batch = try SecurIDSDTID.Batch(header: header)
        let stub = try SecurIDXML.parse(Array("<TKN><SN>\(shortSerial)</SN></TKN>".utf8))
        let keys = try SecurIDSDTID.derive(batch: batch, tokens: [stub], passwordOrOrigin: Array("N/A".utf8))
        let stream = SecurIDCrypto.encryptBlock(key: keys.tokens[0].encryption,
                                                SecurIDSDTID.fixed(Array(shortSerial.utf8), 8) + Array("Seed".utf8) + [0, 0, 0, 0])
        let encrypted = Data(zip(stream, seed).map { $0 ^ $1 }).base64EncodedString()
        let body = "<TKN>\n    <SN>\(shortSerial)</SN>\n    <Seed>=\(encrypted)</Seed>\n    <UserLogin>alice &amp; bob</UserLogin>\n"
            + "    <Digits>8</Digits>\n    <Interval>60</Interval>\n    <AddPIN>0</AddPIN>\n"
        let unsigned = try SecurIDXML.parse(Array((body + "  </TKN>").utf8))
        let mac = SecurIDCrypto.cbcMAC(key: keys.tokens[0].mac, iv: SecurIDSDTID.tokenMACIV, data: SecurIDSDTID.macInput(unsigned))
        let second = body + "    <TokenMAC>\(Data(mac).base64EncodedString())</TokenMAC>\n  </TKN>\n"
        let xml = a.replacingOccurrences(of: "  <TKNTrailer>", with: "  " + second + "  <TKNTrailer>")

        let tokens = try SecurIDSDTID.decode(Array(xml.utf8), options: F.options())
        #expect(tokens.count == 2)
        try F.expectMatches(tokens[0], letter: "A", source: "sdtid")
        let other = try #require(tokens.last)
        #expect(other.serial == "00" + shortSerial)
        #expect(F.seedHex(other) == Hex.encode(seed))
        #expect(other.account == "alice & bob")
        #expect(other.pinMode == .prefix)
        let parameters = try #require(F.parameters(other))
        #expect(parameters.digits == 8 && parameters.interval == 60 && !parameters.addsPIN)

        // One bad token fails the whole batch.
        let broken = xml.replacingOccurrences(of: "alice &amp; bob", with: "alice &amp; eve")
        #expect(F.sdtidError(broken, F.options())?.code == .checksum)
    }
}
