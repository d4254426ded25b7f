import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// Google Authenticator's otpauth-migration:// export and the protobuf reader under it.
@Suite struct MigrationTests {
    nonisolated(unsafe) static let migration = (try? ImportVectors.json("otpauth.json"))?.table("otpauth")?.table("migration") ?? [:]

    static func uri() throws -> String { try #require(migration.string("uri")) }

    /// The payload's `data=` parameter, base64-decoded (by Foundation, independently of ours).
    static func payload() throws -> [UInt8] {
        let components = try #require(URLComponents(string: try uri()))
        let data = try #require(components.queryItems?.first { $0.name == "data" }?.value)
        return Array(try #require(Data(base64Encoded: data)))
    }

    static func uri(for payload: [UInt8], urlSafe: Bool = false) -> String {
        var text = Data(payload).base64EncodedString()
        if urlSafe {
            text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let escaped = text.replacingOccurrences(of: "+", with: "%2B").replacingOccurrences(of: "/", with: "%2F")
            .replacingOccurrences(of: "=", with: "%3D")
        return "otpauth-migration://offline?data=" + escaped
    }

    @Test func decodesTheSharedPayload() throws {
        let decoded = try #require(Self.migration.table("decoded"))
        let expected = decoded.list("otp_parameters")
        try #require(expected.count >= 2)
        let tokens = try importText(try Self.uri())
        try #require(tokens.count == expected.count)
        for (token, entry) in zip(tokens, expected) {
            let oath = try #require(token.oath)
            #expect(token.source == "otpauth-migration")
            #expect(token.secretHex == entry.string("secret_hex"))
            #expect(Base32.encode(token.secret) == entry.string("secret_b32"))
            #expect(token.account == entry.string("name"))
            #expect(token.issuer == entry.string("issuer"))
            #expect(oath.algorithm.name == entry.string("algorithm"))
            #expect(oath.digits == entry.int("digits"))
            #expect(oath.kind.rawValue == entry.string("type"))
            #expect(oath.counter == UInt64(entry.int("counter") ?? 0))
            #expect(oath.period == 30)
        }
        let payload = try MigrationImport.decodePayload(try Self.payload())
        #expect(payload.version == UInt64(try #require(decoded.int("version"))))
        #expect(payload.batchSize == UInt64(try #require(decoded.int("batch_size"))))
        #expect(payload.batchIndex == UInt64(try #require(decoded.int("batch_index"))))
        #expect(payload.batchID == UInt64(try #require(decoded.int("batch_id"))))
    }

    /// Base64 variants (raw '+', URL-safe without padding, form-decoded spaces) decode alike,
    /// and migration lines mix with otpauth lines.
    @Test func acceptsEncodingVariantsAndMixedLines() throws {
        let payload = try Self.payload()
        let reference = try importText(try Self.uri()).map(\.secretHex)
        let plain = "otpauth-migration://offline?data=" + Data(payload).base64EncodedString()
        for variant in [Self.uri(for: payload, urlSafe: true), plain, plain.replacingOccurrences(of: "+", with: " "),
                        "OTPAUTH-MIGRATION://offline?data=" + Data(payload).base64EncodedString()] {
            #expect(try importText(variant).map(\.secretHex) == reference, "\(variant)")
        }
        let otpauth = try #require(OTPAuthImportTests.uris.first?.string("uri"))
        let mixed = try importText([try Self.uri(), otpauth, try Self.uri()].joined(separator: "\n"))
        #expect(mixed.map(\.source) == ["otpauth-migration", "otpauth-migration", "otpauth", "otpauth-migration", "otpauth-migration"])
    }

    // MARK: hand-built payloads

    /// A tiny protobuf writer for the tests (the reader under test must not check itself).
    enum Proto {
        static func varint(_ value: UInt64) -> [UInt8] {
            var value = value
            var out = [UInt8]()
            repeat {
                var byte = UInt8(value & 0x7F)
                value >>= 7
                if value != 0 { byte |= 0x80 }
                out.append(byte)
            } while value != 0
            return out
        }
        static func key(_ field: UInt64, _ wire: UInt64) -> [UInt8] { varint(field << 3 | wire) }
        static func int(_ field: UInt64, _ value: UInt64) -> [UInt8] { key(field, 0) + varint(value) }
        static func bytes(_ field: UInt64, _ value: [UInt8]) -> [UInt8] { key(field, 2) + varint(UInt64(value.count)) + value }
        static func string(_ field: UInt64, _ value: String) -> [UInt8] { bytes(field, Array(value.utf8)) }

        static func entry(secret: [UInt8]? = Array("12345678901234567890".utf8), name: String = "Issuer:alice", issuer: String = "",
                          algorithm: UInt64 = 1, digits: UInt64 = 1, type: UInt64 = 2, counter: UInt64? = nil,
                          extra: [UInt8] = []) -> [UInt8] {
            var out = [UInt8]()
            if let secret { out += bytes(1, secret) }
            out += string(2, name)
            if !issuer.isEmpty { out += string(3, issuer) }
            out += int(4, algorithm) + int(5, digits) + int(6, type)
            if let counter { out += int(7, counter) }
            return out + extra
        }

        static func payload(_ entries: [[UInt8]], extra: [UInt8] = []) -> [UInt8] {
            entries.flatMap { bytes(1, $0) } + int(2, 1) + int(3, 1) + int(4, 0) + int(5, 7) + extra
        }
    }

    @Test func mapsEnumsAndNames() throws {
        let payload = Proto.payload([
            Proto.entry(name: "ACME:  bob@example.org", algorithm: 3, digits: 2, type: 2),
            Proto.entry(name: "carol", issuer: "Corp", algorithm: 2, type: 1, counter: 42),
            Proto.entry(name: "Label:dave", issuer: "Real Issuer", algorithm: 0, digits: 0, type: 0),
        ])
        let tokens = try importText(Self.uri(for: payload))
        try #require(tokens.count == 3)
        #expect(tokens[0].account == "bob@example.org")
        #expect(tokens[0].issuer == "ACME")
        #expect(tokens[0].oath == OATHParameters(kind: .totp, algorithm: .sha512, digits: 8))
        #expect(tokens[1].account == "carol")
        #expect(tokens[1].issuer == "Corp")
        #expect(tokens[1].oath == OATHParameters(kind: .hotp, algorithm: .sha256, digits: 6, counter: 42))
        #expect(tokens[2].account == "dave")
        #expect(tokens[2].issuer == "Real Issuer")
        #expect(tokens[2].oath == OATHParameters(kind: .totp))
    }

    /// Found by fuzz/harnesses/migration.swift: names split as otpauth labels do — at the
    /// first ':' byte even when a combining mark follows it, spaces dropped before any account.
    @Test func namesSplitLikeOTPAuthLabels() throws {
        let payload = Proto.payload([
            Proto.entry(name: "ACME:\u{339}alice"),
            Proto.entry(name: "  bob"),
        ])
        let tokens = try importText(Self.uri(for: payload))
        try #require(tokens.count == 2)
        #expect(tokens[0].issuer == "ACME")
        #expect(tokens[0].account == "\u{339}alice")
        #expect(tokens[1].issuer == nil)
        #expect(tokens[1].account == "bob")
    }

    @Test func skipsUnknownFields() throws {
        // Unknown fields of every wire type, in the payload and in an entry.
        let unknown = Proto.int(15, 300) + Proto.key(16, 1) + [UInt8](repeating: 7, count: 8)
            + Proto.bytes(17, [1, 2, 3]) + Proto.key(18, 5) + [1, 2, 3, 4]
        let payload = Proto.payload([Proto.entry(extra: unknown)], extra: unknown)
        let tokens = try importText(Self.uri(for: payload))
        #expect(tokens.map(\.secretASCII) == ["12345678901234567890"])
    }

    static let refusals: [(String, [UInt8], ImportError.Code)] = [
        ("MD5", Proto.payload([Proto.entry(algorithm: 4)]), .unsupported),
        ("unknown algorithm", Proto.payload([Proto.entry(algorithm: 9)]), .unsupported),
        ("seven digits enum", Proto.payload([Proto.entry(digits: 3)]), .unsupported),
        ("unknown type", Proto.payload([Proto.entry(type: 5)]), .unsupported),
        ("no secret", Proto.payload([Proto.entry(secret: nil)]), .malformed),
        ("empty secret", Proto.payload([Proto.entry(secret: [])]), .malformed),
        ("no account", Proto.payload([Proto.entry(name: "Issuer:")]), .malformed),
        ("negative counter", Proto.payload([Proto.entry(type: 1, counter: UInt64.max)]), .malformed),
        ("no entries", Proto.int(2, 1), .malformed),
        ("empty payload", [], .malformed),
        ("truncated varint", Proto.payload([Proto.entry()]) + [0x10, 0x80], .malformed),
        ("varint over 64 bits", Proto.key(2, 0) + [UInt8](repeating: 0xFF, count: 9) + [0x02], .malformed),
        ("length past the end", Proto.key(1, 2) + Proto.varint(200) + [1, 2, 3], .malformed),
        ("length past the entry", Proto.bytes(1, Proto.key(1, 2) + Proto.varint(50) + [1, 2]), .malformed),
        ("huge length", Proto.key(1, 2) + Proto.varint(UInt64.max), .malformed),
        ("field number zero", [0x00, 0x01], .malformed),
        ("group wire type", Proto.key(9, 3) + Proto.key(9, 4), .malformed),
        ("wire type 7", Proto.key(9, 7), .malformed),
        ("secret as varint", Proto.payload([Proto.int(1, 5) + Proto.string(2, "x")]), .malformed),
        ("entries as varint", Proto.int(1, 3), .malformed),
        ("fixed64 past the end", Proto.key(9, 1) + [1, 2, 3], .malformed),
        ("name not UTF-8", Proto.payload([Proto.entry() + Proto.bytes(2, [0xFF, 0xFE])]), .malformed),
    ]

    @Test(arguments: MigrationTests.refusals.indices)
    func refusesMalformedPayloads(index: Int) throws {
        let (label, payload, code) = Self.refusals[index]
        let error = try #require(importError(Self.uri(for: payload)), "\(label)")
        #expect(error.code == code, "\(label): \(error)")
        #expect(error.message.hasPrefix("line 1: "), "\(label): \(error)")
    }

    @Test func namesTheFailingAccount() throws {
        let payload = Proto.payload([Proto.entry(name: "good"), Proto.entry(name: "Bad:md5", algorithm: 4)])
        let error = try #require(importError("# header\n" + Self.uri(for: payload)))
        #expect(error.code == .unsupported)
        #expect(error.message.contains("line 2"))
        #expect(error.message.contains("account 2 (Bad:md5)"))
        #expect(error.message.contains("MD5"))
    }

    @Test(arguments: [
        "otpauth-migration://offline",
        "otpauth-migration://offline?foo=bar",
        "otpauth-migration://online?data=CgA%3D",
        "otpauth-migration://offline?data=",
        "otpauth-migration://offline?data=%ZZ",
        "otpauth-migration://offline?data=not*base64",
        "otpauth-migration://offline?data=QUJD&data=QUJD",
    ])
    func refusesMalformedURIs(text: String) throws {
        let error = try #require(importError(text))
        #expect(error.code == .malformed, "\(error)")
    }
}
