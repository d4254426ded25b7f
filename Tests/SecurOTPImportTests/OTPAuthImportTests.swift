import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// otpauth:// URIs through `TokenImporter`: one at a time, many per input, and the line
/// numbers in errors.
@Suite struct OTPAuthImportTests {
    nonisolated(unsafe) static let uris = (try? ImportVectors.json("otpauth.json"))?.table("otpauth")?.list("uris") ?? []

    @Test func vectorFileIsPresent() { #expect(Self.uris.count >= 5) }

    static func check(_ token: ImportedToken, against vector: [String: Any]) throws {
        let expected = try #require(vector.table("parsed"))
        let oath = try #require(token.oath)
        #expect(token.source == "otpauth")
        #expect(oath.kind.rawValue == expected.string("type"))
        #expect(token.account == expected.string("account"))
        #expect(token.issuer == expected.string("issuer"))
        #expect(token.secretHex == expected.string("secret_hex"))
        #expect(oath.algorithm.name == expected.string("algorithm"))
        #expect(oath.digits == expected.int("digits"))
        if let period = expected.int("period") { #expect(oath.period == period) }
        if let counter = expected.int("counter") { #expect(oath.counter == UInt64(counter)) }
        for code in vector.list("codes") {
            if let time = code.int("time") {
                #expect(token.code(at: Int64(time)) == code.string("otp"))
            } else {
                #expect(UInt64(try #require(code.int("counter"))) == oath.counter)
                #expect(token.code(at: 0) == code.string("otp"))
            }
        }
    }

    @Test(arguments: OTPAuthImportTests.uris.indices)
    func importsSharedVector(index: Int) throws {
        let vector = Self.uris[index]
        let tokens = try importText(try #require(vector.string("uri")))
        try #require(tokens.count == 1)
        try Self.check(tokens[0], against: vector)
    }

    /// All the URIs in one input, with comments, blank lines, CRLF line ends and indentation.
    @Test func importsManyLinesAtOnce() throws {
        var lines = ["# exported by a test", ""]
        for (index, vector) in Self.uris.enumerated() {
            let uri = try #require(vector.string("uri"))
            lines.append(index.isMultiple(of: 2) ? uri : "  \(uri)\t")
            if index == 1 { lines += ["   # a comment in between", "   "] }
        }
        let text = lines.joined(separator: "\r\n") + "\r\n"
        let tokens = try importText("\u{FEFF}" + text)
        try #require(tokens.count == Self.uris.count)
        for (token, vector) in zip(tokens, Self.uris) { try Self.check(token, against: vector) }
    }

    /// oathtool computes the same codes as the imported tokens, at random times.
    @Test(arguments: OTPAuthImportTests.uris.indices)
    func codesAgreeWithOathtool(index: Int) throws {
        let uri = try #require(Self.uris[index].string("uri"))
        let token = try #require(try importText(uri).first)
        for _ in 0..<3 {
            let time = Int64.random(in: 0...4_000_000_000)
            #expect(token.code(at: time) == (try Oracle.oathtool(token, time: time)), "at \(time)")
        }
    }

    /// All or nothing: a bad line fails the whole input, and the error names the line.
    @Test func badLineFailsTheImportAndIsNamed() throws {
        let good = try #require(Self.uris.first?.string("uri"))
        let cases: [(String, Int, ImportError.Code)] = [
            ("otpauth://totp/a?secret=JBSWY3D1", 4, .malformed),
            ("otpauth://hotp/a?secret=JBSWY3DP", 4, .malformed),
            ("otpauth://totp/a?secret=JBSWY3DP&algorithm=MD5", 4, .malformed),
            ("https://example.com/not-a-token", 4, .unrecognized),
            ("otpauth-migration://offline?data=%%%", 4, .malformed),
        ]
        for (bad, line, code) in cases {
            let text = [good, "# comment", "", bad, good].joined(separator: "\n")
            let error = try #require(importError(text), "\(bad)")
            #expect(error.code == code, "\(bad): \(error)")
            #expect(error.message.contains("line \(line)"), "\(bad): \(error)")
        }
    }
}
