import Foundation
import Testing
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

/// Fresh tokens made by Debian's stoken at test time (random seeds), exported to every format
/// it writes, imported by us and compared with what stoken itself says: decrypted seed and
/// tokencodes at several times.
@Suite struct SecurIDStokenImportTests {
    typealias F = SecurIDFixtures
    typealias S = SecurIDStokenCLI

    /// A securotp-style binding ID (24 hex characters) and another one.
    static let binding = "3f9a0c2b7e41d58a6c0b19e2"
    static let otherBinding = "0123456789abcdef01234567"
    static let times: [Int64] = [946_684_800, 1_234_567_890, 1_700_000_000, 1_700_000_029, 1_700_000_030,
                                 1_700_000_095, 1_767_225_599, 2_000_000_000]

    /// Checks our import of a token against stoken reading the same source.
    static func compare(_ imported: ImportedToken, stokenSource: [String], pins: [String] = ["0000", "1234", "86420975"],
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(F.seedHex(imported) == (try S.seedHex(stokenSource)), sourceLocation: sourceLocation)
        let token = try #require(F.securID(imported), sourceLocation: sourceLocation)
        for (number, time) in times.enumerated() {
            let pin = pins[number % pins.count]
            let expected = try S.run(["tokencode", "--use-time=\(time)", "--pin=\(pin)", "--batch", "--force"] + stokenSource)
            // stoken ignores --pin for tokens without AddPIN; the user types PIN then code.
            let ours = token.parameters.addsPIN ? token.passcode(at: time, pin: Array(pin.utf8)) : token.tokencode(at: time)
            #expect(String(decoding: ours, as: UTF8.self) == expected, "time \(time) PIN \(pin)", sourceLocation: sourceLocation)
        }
    }

    @Test func randomSDTIDWithPassword() throws {
        _ = try S.requirePath()
        let xml = try S.run(["export", "--random", "--sdtid", "--new-password=s3cret pass"])
        let path = try S.file(xml, name: "random.sdtid")
        defer { S.remove(path) }
        let imported = try #require(try SecurIDSDTID.decode(Array(xml.utf8), options: F.options(password: "s3cret pass")).first)
        try Self.compare(imported, stokenSource: ["--file=\(path)", "--password=s3cret pass"])
        #expect(imported.pinMode == .addedByToken)   // stoken's random tokens use PIN mode 3
        #expect(F.sdtidError(xml, F.options(password: "s3cret pas"))?.code == .password)
        #expect(F.sdtidError(xml, F.options())?.code == .password)
    }

    /// A template fixes the fields: 6 digits, 30 s, no AddPIN (fob style), a login with XML
    /// escapes, a short hardware-style serial and a Death date.
    @Test func templatedSDTIDFobStyle() throws {
        _ = try S.requirePath()
        let template = """
        <?xml version="1.0"?>
        <TKNBatch>
          <TKNHeader>
            <Origin>Example &amp; Co</Origin>
            <Dest>Ops</Dest>
            <Name>Batch-42</Name>
            <DefDeath>2031/05/17</DefDeath>
            <DefDigits>6</DefDigits>
            <DefInterval>30</DefInterval>
            <DefAddPIN>0</DefAddPIN>
            <DefLocalPIN>0</DefLocalPIN>
          </TKNHeader>
          <TKN>
            <SN>000055512345</SN>
            <UserLogin>o'brien &lt;ops&gt;</UserLogin>
          </TKN>
        </TKNBatch>
        """
        let templatePath = try S.file(template, name: "template.xml")
        defer { S.remove(templatePath) }
        let xml = try S.run(["export", "--random", "--sdtid", "--template=\(templatePath)"])
        let path = try S.file(xml, name: "templated.sdtid")
        defer { S.remove(path) }
        let imported = try #require(try SecurIDSDTID.decode(Array(xml.utf8), options: F.options()).first)
        try Self.compare(imported, stokenSource: ["--file=\(path)"])
        let parameters = try #require(F.parameters(imported))
        #expect(parameters.digits == 6 && parameters.interval == 30 && !parameters.addsPIN && !parameters.localPIN)
        #expect(imported.pinMode == .prefix)
        #expect(imported.serial == "000055512345")
        #expect(imported.account == "o'brien <ops>")
        #expect(parameters.expiresAt == F.unixTime(ofDate: "2031/05/18"))
        #expect(F.sdtidError(xml, F.options(now: F.unixTime(ofDate: "2031/05/18") ?? 0))?.code == .expired)
    }

    /// One random token exported as every CTF form stoken writes, with passwords and our
    /// 24-hex binding ID as the device ID.
    @Test func everyCTFExportOfARandomToken() throws {
        _ = try S.requirePath()
        let xml = try S.run(["export", "--random", "--sdtid"])
        let path = try S.file(xml, name: "source.sdtid")
        defer { S.remove(path) }
        let source = ["--file=\(path)"]
        let reference = try #require(try SecurIDSDTID.decode(Array(xml.utf8), options: F.options()).first)
        try Self.compare(reference, stokenSource: source)

        struct Export {
            var flags: [String]
            var password: String?
            var device: String?
        }
        let exports = [
            Export(flags: [], password: nil, device: nil),
            Export(flags: ["--blocks"], password: nil, device: nil),
            Export(flags: ["--iphone"], password: nil, device: nil),
            Export(flags: ["--android"], password: nil, device: nil),
            Export(flags: ["--v3"], password: nil, device: nil),
            Export(flags: ["--blocks"], password: nil, device: Self.binding),
            Export(flags: [], password: "pw-1", device: Self.binding),
            Export(flags: ["--iphone"], password: "x", device: Self.binding),
            Export(flags: ["--android"], password: "a much longer password, 40 chars max!!!", device: nil),
            Export(flags: ["--v3"], password: "Correct horse", device: Self.binding),
            Export(flags: ["--v3"], password: nil, device: Self.binding),
            Export(flags: ["--v3"], password: "only a password", device: nil),
        ]
        for export in exports {
            var arguments = ["export"] + source + export.flags
            if let password = export.password { arguments.append("--new-password=\(password)") }
            if let device = export.device { arguments.append("--new-devid=\(device)") }
            let string = try S.run(arguments)
            let label = "\(export.flags) password \(export.password ?? "-") device \(export.device ?? "-")"
            let imported = try SecurIDCTF.decode(string, options: F.options(password: export.password, device: export.device))
            var stokenSource = ["--token=\(string)"]
            if let password = export.password { stokenSource.append("--password=\(password)") }
            if let device = export.device { stokenSource.append("--devid=\(device)") }
            #expect(F.seedHex(imported) == F.seedHex(reference), "\(label)")
            #expect(imported.serial == reference.serial, "\(label)")
            #expect(imported.expires == reference.expires, "\(label)")
            try Self.compare(imported, stokenSource: stokenSource, pins: ["5555"])

            if export.device != nil {
                let error = F.ctfError(string, F.options(password: export.password, device: Self.otherBinding))
                #expect(error?.code == .deviceBinding, "\(label): \(error?.message ?? "accepted")")
                #expect(error?.message.contains("bound to another device ID") == true, "\(label)")
            }
            if let password = export.password {
                let error = F.ctfError(string, F.options(password: password + "?", device: export.device))
                #expect(error?.code == .password, "\(label): \(error?.message ?? "accepted")")
            }
        }
    }

    /// XML details stoken (libxml2) and our reader treat the same way, on the vector file A.
    @Test func xmlVariantsAgreeWithStoken() throws {
        _ = try S.requirePath()
        let a = try #require(F.token("A")?["sdtid_xml"] as? String)
        let variants = [
            ("comment", a.replacingOccurrences(of: "<UserLogin> </UserLogin>", with: "<!-- hi --><UserLogin> </UserLogin>"), true),
            ("cdata", a.replacingOccurrences(of: "<Seed>", with: "<Seed><![CDATA[]]>"), true),
            ("charref", a.replacingOccurrences(of: "<Origin>N/A</Origin>", with: "<Origin>N&#47;A</Origin>"), true),
            ("empty element", a.replacingOccurrences(of: "<Nickname> </Nickname>", with: "<Nickname/>"), false),
            ("edited login", a.replacingOccurrences(of: "<UserLogin> </UserLogin>", with: "<UserLogin>x</UserLogin>"), false),
        ]
        for (name, xml, accepted) in variants {
            let path = try S.file(xml, name: "\(name.replacingOccurrences(of: " ", with: "-")).sdtid")
            defer { S.remove(path) }
            let stokenAccepts = (try? S.run(["tokencode", "--file=\(path)", "--use-time=1700000000", "--pin=0000", "--batch", "--force"])) != nil
            #expect(stokenAccepts == accepted, "stoken on \(name)")
            #expect((F.sdtidError(xml, F.options()) == nil) == accepted, "ours on \(name)")
        }
    }
}
