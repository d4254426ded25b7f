import Foundation
import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// pam_u2f's mapping files read as pam_u2f 1.4.0 reads them (docs/fido.md, "pam_u2f's mapping
/// files"; issue 25 item 9): pam_u2f's own fixtures with what its tests expect, and the shapes
/// real files have (CRLF, bytes that are not UTF-8, malformed lines, trailing colons).
@Suite struct MappingFileTests {
    static let origin = "pam://test"
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/pam-u2f")

    static func field(_ seed: UInt8, _ tail: String = ",es256,+presence") -> String {
        Base64.encode(Array(repeating: seed, count: 32), .standard) + "," + Base64.encode(Array(repeating: seed &+ 1, count: 64), .standard) + tail
    }

    static func line(_ user: String, _ bytes: [UInt8]) -> U2FMappingFile.Line? {
        U2FMappingFile.line(for: user, in: bytes, origin: origin, appID: origin)
    }

    static func handles(_ line: U2FMappingFile.Line?) -> [UInt8] { line?.credentials.map { $0.keyHandle.first ?? 0 } ?? [] }

    struct Case: Decodable, CustomTestStringConvertible {
        struct Credential: Decodable {
            let keyHandle: String
            let publicKey: String
            let coseType: String
            let attributes: String
            let old_format: Bool
        }
        let file: String
        let max_devices: Int
        let result: String
        let count: Int?
        let credentials: [Credential]
        var testDescription: String { "\(file), max_devs \(max_devices)" }
    }

    static let cases: [Case] = {
        struct Vectors: Decodable { let cases: [Case] }
        guard let data = try? Data(contentsOf: vectors.appendingPathComponent("get_devices.json")),
              let decoded = try? JSONDecoder().decode(Vectors.self, from: data) else { return [] }
        return decoded.cases
    }()

    @Test("pam_u2f 1.4.0's fixtures (tests/credentials) read as its tests/get_devices.c expects", arguments: cases)
    func pamU2FFixtures(_ fixture: Case) throws {
        let text = try String(contentsOf: Self.vectors.appendingPathComponent("credentials/" + fixture.file), encoding: .utf8)
        let bytes = Array(text.replacingOccurrences(of: "@USERNAME@", with: "alice").utf8)
        guard fixture.result == "PAM_SUCCESS" else {
            // empty.cred, `alice:`: pam_u2f finds no credential (PAM_IGNORE under nouserok); here the
            // line names alice, a key holder without a usable key (docs/fido.md, "Where securotp
            // deliberately differs").
            let line = try #require(Self.line("alice", bytes))
            #expect(line.entries.isEmpty && U2FMappingFile.userHasLine("alice", in: bytes))
            return
        }
        let line = try #require(Self.line("alice", bytes))
        #expect(U2FMappingFile.userHasLine("alice", in: bytes))
        let entries = Array(line.entries.prefix(fixture.max_devices))
        #expect(entries.count == fixture.count)
        for (entry, expected) in zip(entries, fixture.credentials) {
            let credential = try #require(entry.credential, "\(entry.problem)")
            if expected.keyHandle == "*" {
                #expect(credential.resident)
            } else {
                #expect(credential.keyHandle == Array(try #require(Data(base64Encoded: expected.keyHandle))))
            }
            if expected.old_format {
                let point = try #require(Hex.decode(expected.publicKey))
                #expect([0x04] + credential.publicKey == point)
            } else {
                var key = Array(try #require(Data(base64Encoded: expected.publicKey)))
                if credential.type == .es256, key.count == 65 { key.removeFirst() }
                #expect(credential.publicKey == key)
            }
            #expect(credential.type.rawValue == expected.coseType)
            #expect(credential.presence == expected.attributes.contains("+presence"))
            #expect(credential.verification == expected.attributes.contains("+verification"))
            #expect(credential.pin == expected.attributes.contains("+pin"))
        }
    }

    @Test("CRLF: each line is its own user's; the \\r stays in the last field as pam_u2f reads it (+presence\\r is +presence)")
    func crlf() throws {
        let file = Array("root:\(Self.field(1))\r\nbob:\(Self.field(3)):\(Self.field(5))".utf8)
        let root = try #require(Self.line("root", file))
        #expect(Self.handles(root) == [1] && root.problems.isEmpty && root.credentials.first?.presence == true)
        let bob = try #require(Self.line("bob", file))
        #expect(Self.handles(bob) == [3, 5] && bob.number == 2)
        // Without attributes the \r is the type's, as pam_u2f's cose_type sees it: refused, the user still named.
        let bare = Array("root:\(Self.field(1, ",es256"))\r\n".utf8)
        let named = try #require(Self.line("root", bare))
        #expect(named.credentials.isEmpty && named.problems.count == 1 && U2FMappingFile.userHasLine("root", in: bare))
        // A line that is only a name: "root\r" is not root (pam_u2f compares the bytes).
        #expect(Self.line("root", Array("root\r\n".utf8)) == nil)
    }

    @Test("Shapes pam_u2f reads and the old reader refused: no attributes, unknown attributes, an extra field, ES256, trailing : and ::")
    func pamU2FShapes() throws {
        let shapes: [(String, Bool)] = [
            (Self.field(1, ",es256"), false), (Self.field(1, ",es256,+presence+foo"), true), (Self.field(1, ",es256,+presence,extra"), true),
            (Self.field(1, ",ES256,+presence"), true), (Self.field(1, ",,es256,,+presence"), true), (Self.field(1) + ":", true),
            (Self.field(1) + "::", true), (":" + Self.field(1), true),
        ]
        for (field, presence) in shapes {
            let line = try #require(Self.line("alice", Array("alice:\(field)\n".utf8)), "\(field)")
            #expect(Self.handles(line) == [1] && line.problems.isEmpty, "\(field): \(line.problems)")
            #expect(line.credentials.first?.presence == presence && line.credentials.first?.type == .es256, "\(field)")
        }
        // `securotp import USER LINE` reads the same way.
        let parsed = FidoCredential.parse(line: "alice:" + Self.field(1) + "::\n", origin: Self.origin)
        #expect(parsed.problem.isEmpty && parsed.credentials.count == 1 && parsed.user == "alice", "\(parsed.problem)")
        let crlf = FidoCredential.parse(line: "alice:" + Self.field(1) + "\r\n", origin: Self.origin)
        #expect(crlf.problem.isEmpty && crlf.credentials.first?.presence == true, "\(crlf.problem)")
        // After `::` a CRLF line's last field is "\r", a credential without a public key: pam_u2f refuses the file.
        #expect(!FidoCredential.parse(line: "alice:" + Self.field(1) + "::\r\n", origin: Self.origin).problem.isEmpty)
    }

    @Test("Bytes that are not UTF-8 (a Latin-1 comment, another user's name) touch only their own line")
    func notUTF8() throws {
        let file = [UInt8]("# caf".utf8) + [0xE9] + Array("\nj".utf8) + [0xF6, 0x72] + Array("g:\(Self.field(7))\nalice:\(Self.field(1))\n".utf8)
        #expect(Self.handles(Self.line("alice", file)) == [1])
        #expect(Self.line("bob", file) == nil && !U2FMappingFile.userHasLine("bob", in: file))
        let all = U2FMappingFile.lines(file, origin: Self.origin, appID: Self.origin)
        #expect(all.map(\.number) == [1, 2, 3] && all[1].user == nil && all[1].credentials.count == 1)
    }

    @Test("A named user whose line holds nothing usable still has a line (a key holder, never nouserok's non-holder)")
    func malformedNamedLine() throws {
        for text in ["alice:garbage\n", "alice:AAAA,AAAA,es256,+presence\n", "alice:\n", "alice\n", "alice:" + Self.field(1, ",es384,+presence")] {
            let bytes = Array(text.utf8)
            #expect(U2FMappingFile.userHasLine("alice", in: bytes), "\(text)")
            let line = try #require(Self.line("alice", bytes), "\(text)")
            #expect(line.credentials.isEmpty, "\(text)")
        }
    }

    @Test("As pam_u2f: no blank trimmed, no comment syntax, a NUL ends the line's text, the user's last line counts, in the line's order")
    func pamU2FLines() throws {
        #expect(Self.line("alice", Array(" alice:\(Self.field(1))\n".utf8)) == nil, "a leading blank is part of the name")
        #expect(Self.line("alice", Array("alice:\(Self.field(1))\0:\(Self.field(3))\n".utf8)).map(Self.handles) == [1])
        #expect(Self.line("alice", Array("\0alice:\(Self.field(1))\n".utf8)) == nil)
        let file = Array("alice:\(Self.field(1))\n#alice:\(Self.field(9))\nalice:\(Self.field(5)):\(Self.field(3)):\(Self.field(7))".utf8)
        let last = try #require(Self.line("alice", file))
        #expect(last.number == 3 && Self.handles(last) == [5, 3, 7])
        #expect(Self.line("#alice", file)?.number == 2)
    }

    @Test("Every text file the project reads: CRLF line ends are line ends (securotp.conf)")
    func crlfConfig() throws {
        let entries = try ConfigFile.entries("# c\r\nwindow = 3\r\nnullok = yes\r\n", path: "/etc/securotp.conf")
        #expect(entries.map(\.key) == ["window", "nullok"] && entries.map(\.value) == ["3", "yes"] && entries.map(\.line) == [2, 3])
        var settings = Settings()
        try settings.apply(fileText: "window = 3\r\nnullok = yes\r\n", path: "/etc/securotp.conf")
        #expect(settings.nullok)
        #expect(TextLines.split("a\r\nb\nc\r\n") == ["a", "b", "c", ""])
    }
}
