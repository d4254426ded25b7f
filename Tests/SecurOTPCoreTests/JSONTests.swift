import Foundation
import Testing
import TestSupport
@testable import SecurOTPCore

/// The module's JSON reader and writer, with Foundation's JSONSerialization as the oracle.
@Suite struct JSONReaderTests {
    static func parse(_ text: String) -> JSONValue? { JSONReader.parse(Array(text.utf8)) }

    /// Our value as Foundation's shapes, to compare with JSONSerialization.
    static func foundation(_ value: JSONValue) -> NSObject? {
        switch value {
        case .null: NSNull()
        case .bool(let flag): NSNumber(value: flag)
        case .number(let number): number.map { NSNumber(value: $0) }
        case .string(let text): text as NSString
        case .array(let items):
            items.reduce(NSMutableArray() as NSMutableArray?) { array, item in
                guard let array, let converted = foundation(item) else { return nil }
                array.add(converted)
                return array
            }
        case .object(let members):
            members.reduce(NSMutableDictionary() as NSMutableDictionary?) { dictionary, member in
                guard let dictionary, let converted = foundation(member.value) else { return nil }
                dictionary[member.key] = converted
                return dictionary
            }
        }
    }

    static func hasNumberWithoutValue(_ value: JSONValue) -> Bool {
        switch value {
        case .number(let number): number == nil
        case .array(let items): items.contains(where: hasNumberWithoutValue)
        case .object(let members): members.contains { hasNumberWithoutValue($0.value) }
        default: false
        }
    }

    static let documents = [
        #"{"result":"challenge","serial":"100001","challenge":{"id":"0f3c","kind":"new_pin","prompt":"Enter a new PIN (4 to 8 digits): ","confirm_prompt":"Enter the new PIN again: ","expires_in":180},"failures":0}"#,
        #"{"has_tokens":true,"code_digits":[6,8],"ocra_suite":"OCRA-1:HOTP-SHA1-6:QN08"}"#,
        #"{"error":{"code":"unauthorized","message":"unknown or revoked credential"}}"#,
        #" [ 1 , -2 , 0 , true , false , null , "a\"b\\c\/d\b\f\n\r\t" , "\u00e9\u4e2d\ud83d\ude00" , [[[]]] , {} ] "#,
        #"{"nested":{"a":[{"b":{"c":[1,2,{"d":null}]}}]},"x":"é中😀"}"#,
        "9223372036854775807", "-9223372036854775808", "\"\"", "[]",
    ]

    @Test(arguments: documents)
    func agreesWithFoundation(text: String) throws {
        let ours = try #require(Self.parse(text), "refused valid JSON: \(text)")
        let theirs = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? NSObject
        #expect(Self.foundation(ours) == theirs, "\(text)")
    }

    @Test func accessors() throws {
        let value = try #require(Self.parse(Self.documents[0]))
        #expect(value["result"]?.string == "challenge" && value["failures"]?.integer == 0)
        #expect(value["challenge"]?["expires_in"]?.integer == 180 && value["challenge"]?["kind"]?.string == "new_pin")
        #expect(value["missing"] == nil && value["result"]?["x"] == nil && value["result"]?.bool == nil)
        #expect(Self.parse(#"{"a":[1,2]}"#)?["a"]?.array == [.number(1), .number(2)])
    }

    @Test func numbers() {
        #expect(Self.parse("9223372036854775807") == .number(Int64.max))
        #expect(Self.parse("-9223372036854775808") == .number(Int64.min))
        #expect(Self.parse("9223372036854775808") == .number(nil), "valid JSON, no Int64 value")
        #expect(Self.parse("-9223372036854775809") == .number(nil))
        #expect(Self.parse("-0") == .number(0))
        for text in ["1.5", "1e3", "1E+3", "-2.0e-7", "0.0"] { #expect(Self.parse(text) == .number(nil), "\(text)") }
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{'a':1}", "{\"a\" 1}", "{\"a\":}", "[1 2]", "tru", "nul", "True", "NaN", "Infinity",
        "01", "-", "1.", ".5", "+1", "1e", "1e+", "--1", "0x10", "\"abc", "\"a\nb\"", "\"tab\there\"", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"",
        "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\u0000\"", "{\"a\":1,\"a\":2}", "[1] [2]", "{} x", "\"\u{7}\"",
    ])
    func refusesMalformed(text: String) {
        #expect(Self.parse(text) == nil, "accepted \(text.debugDescription)")
    }

    @Test func refusesInvalidUTF8AndOverlongForms() {
        for bytes: [UInt8] in [[0x22, 0xff, 0x22], [0x22, 0xc0, 0xaf, 0x22], [0x22, 0xed, 0xa0, 0x80, 0x22], [0x22, 0xe2, 0x82, 0x22], [0x22, 0xf4, 0x90, 0x80, 0x80, 0x22]] {
            #expect(JSONReader.parse(bytes) == nil, "\(bytes)")
        }
    }

    @Test func limits() {
        let deep = String(repeating: "[", count: JSONReader.maxDepth) + String(repeating: "]", count: JSONReader.maxDepth)
        #expect(Self.parse(deep) != nil, "\(JSONReader.maxDepth) levels are allowed")
        #expect(Self.parse("[" + deep + "]") == nil, "one more is not")
        #expect(Self.parse(String(repeating: "[", count: 100_000)) == nil, "no stack overflow")
        let members = (0..<JSONReader.maxMembers).map { "\"k\($0)\":\($0)" }
        #expect(Self.parse("{" + members.joined(separator: ",") + "}") != nil)
        #expect(Self.parse("{" + (members + ["\"extra\":1"]).joined(separator: ",") + "}") == nil)
        let big = "\"" + String(repeating: "a", count: JSONReader.maxBytes - 2) + "\""
        #expect(Self.parse(big) != nil)
        #expect(Self.parse(big + " ") == nil, "over maxBytes")
    }

    /// Mutations of valid documents: the reader never traps, and whatever it accepts is JSON
    /// Foundation reads to the same value (it is only ever stricter).
    @Test func mutationsNeverTrapAndStayValid() throws {
        var generator = SplitMix64(seed: 0x5ec0_7017)
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = Array(Self.documents.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 0...bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0 where position < bytes.count: bytes.remove(at: position)
                case 1: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: position)
                default: if position < bytes.count { bytes[position] = UInt8.random(in: 0...255, using: &generator) }
                }
            }
            guard let ours = JSONReader.parse(bytes) else { continue }
            accepted += 1
            let text = String(decoding: bytes, as: UTF8.self).debugDescription
            guard let theirs = try? JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed) as? NSObject else {
                // Foundation refuses numbers beyond Double's range ("1e99999"); they are JSON.
                #expect(Self.hasNumberWithoutValue(ours), "accepted \(text), which Foundation refuses")
                continue
            }
            #expect(Self.foundation(ours).map { $0 == theirs } ?? true, "accepted \(text) with another value")
        }
        #expect(accepted > 100, "the mutations should leave some documents valid")
    }
}

@Suite struct JSONWriterTests {
    static func text(_ members: [(key: String, value: JSONWriter.Field)]) -> String {
        JSONWriter.object(members).withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test("An array of strings (a preflight's groups), each escaped")
    func writesTexts() throws {
        #expect(Self.text([(key: "user", value: .text("alice")), (key: "groups", value: .texts(["wheel", "domain \"users\""]))])
                == #"{"user":"alice","groups":["wheel","domain \"users\""]}"#)
        #expect(Self.text([(key: "groups", value: .texts([]))]) == #"{"groups":[]}"#)
    }

    @Test func writesExactlyTheObject() throws {
        let passcode: [UInt8] = Array("12345678".utf8)
        let body = passcode.withUnsafeBufferPointer {
            Self.text([(key: "user", value: .text("alice")), (key: "passcode", value: .secret($0)), (key: "code_at_end", value: .bool(true))])
        }
        #expect(body == #"{"user":"alice","passcode":"12345678","code_at_end":true}"#)
        #expect(Self.text([]) == "{}")
    }

    @Test func escapesWhatJSONRequires() throws {
        let tricky = "q\"b\\s/ t\tn\nr\rb\u{8}f\u{c}c\u{1}\u{1f}é中😀\u{7f}"
        let body = Self.text([(key: "user", value: .text(tricky)), (key: "k\"ey", value: .bool(false))])
        let parsed = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        #expect(parsed?["user"] as? String == tricky, "\(body)")
        #expect(parsed?["k\"ey"] as? Bool == false, "\(body)")
        #expect(JSONReader.parse(Array(body.utf8))?["user"]?.string == tricky, "our reader reads our writer")
        #expect(!body.utf8.contains { $0 < 0x20 }, "no raw control characters: \(body)")
    }

    @Test func invalidUTF8BecomesReplacementCharacters() throws {
        let bytes: [UInt8] = [0x31, 0xff, 0x32, 0xc3, 0x33, 0xed, 0xa0, 0x80, 0xe2, 0x82, 0xac]
        let body = bytes.withUnsafeBufferPointer { Self.text([(key: "passcode", value: .secret($0))]) }
        let parsed = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        #expect(parsed?["passcode"] as? String == "1\u{fffd}2\u{fffd}3\u{fffd}\u{fffd}\u{fffd}€", "\(body)")
    }

    @Test func randomSecretsAlwaysMakeValidJSON() throws {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let body = bytes.withUnsafeBufferPointer { Self.text([(key: "answer", value: .secret($0))]) }
            let answer = (try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["answer"] as? String
            #expect(answer != nil, "\(bytes)")
            if let valid = String(validating: bytes, as: UTF8.self) { #expect(answer == valid, "valid UTF-8 arrives unchanged") }
        }
    }
}

