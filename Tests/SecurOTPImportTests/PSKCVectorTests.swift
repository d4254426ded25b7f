import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// Every file in Tests/Vectors/pskc with the keys, passwords and secrets pskc.json lists.
@Suite struct PSKCVectorTests {
    nonisolated(unsafe) static let files = (try? ImportVectors.json("pskc/pskc.json"))?.table("files") ?? [:]
    static let names = files.keys.sorted()

    static func vector(_ name: String) throws -> [String: Any] { try #require(files.table(name)) }

    static func options(for vector: [String: Any], now: Int64 = testNow) -> ImportOptions {
        SecurOTPImportTests.options(password: vector.string("password"), transportKeyHex: vector.string("preshared_key_hex"), now: now)
    }

    @Test func vectorFileListsEveryPSKCFile() throws {
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: ImportVectors.directory.appendingPathComponent("pskc").path)
            .filter { $0.hasSuffix(".pskcxml") }.sorted()
        #expect(onDisk.count >= 5)
        #expect(onDisk == Self.names)
    }

    @Test(arguments: PSKCVectorTests.names)
    func importsExpectedSecrets(name: String) throws {
        let vector = try Self.vector(name)
        let tokens = try TokenImporter.parse(try ImportVectors.bytes("pskc/" + name), options: Self.options(for: vector))
        let expected = vector.strings("secrets_ascii")
        #expect(!expected.isEmpty)
        #expect(tokens.map(\.secretASCII) == expected)
        for token in tokens {
            #expect(token.source == "pskc")
            #expect(token.oath != nil)
            #expect(token.serial != nil)
            #expect(token.issuer != nil)
        }
    }

    /// The derived encryption key pskc.json records, recomputed from the file's PBKDF2-params.
    @Test(arguments: PSKCVectorTests.names.filter { (try? PSKCVectorTests.vector($0).string("derived_key_hex")) != nil })
    func derivesRecordedKey(name: String) throws {
        let vector = try Self.vector(name)
        let root = try PSKCXML.parse(try ImportVectors.bytes("pskc/" + name))
        let keyring = try PSKCKeyring(container: root, options: Self.options(for: vector))
        #expect(keyring.isPasswordBased)
        let key = try keyring.encryptionKey(for: .aesCBC(keyLength: 16))
        #expect(key.withUnsafeBytes { Hex.encode($0) } == vector.string("derived_key_hex"))
    }

    /// The parameters each file declares reach the token (read back from the XML itself, so the
    /// expected values stay in the vector files).
    @Test(arguments: PSKCVectorTests.names)
    func parametersMatchTheXML(name: String) throws {
        let bytes = try ImportVectors.bytes("pskc/" + name)
        let tokens = try TokenImporter.parse(bytes, options: Self.options(for: try Self.vector(name)))
        let root = try PSKCXML.parse(bytes)
        let keys = root.children("KeyPackage").flatMap { $0.children("Key") }
        try #require(keys.count == tokens.count)
        for (key, token) in zip(keys, tokens) {
            let oath = try #require(token.oath)
            let algorithm = try #require(key.attribute("Algorithm"))
            #expect(algorithm.hasSuffix(oath.kind.rawValue))
            #expect(String(oath.digits) == key.path("AlgorithmParameters", "ResponseFormat")?.attribute("Length"))
            #expect(token.issuer == key.child("Issuer")?.text)
            if let suite = key.path("AlgorithmParameters", "Suite")?.text {
                #expect(suite.hasSuffix(oath.algorithm.name))
            } else {
                #expect(oath.algorithm == .sha1)
            }
            if let counter = key.path("Data", "Counter", "PlainValue")?.text { #expect(String(oath.counter) == counter) }
            if let interval = key.path("Data", "TimeInterval", "PlainValue")?.text { #expect(String(oath.period) == interval) }
        }
    }

    /// plain.pskcxml's TOTP key carries a DeviceInfo ExpiryDate: importing after it fails.
    @Test func expiryDateIsEnforced() throws {
        let name = "plain.pskcxml"
        let bytes = try ImportVectors.bytes("pskc/" + name)
        let tokens = try TokenImporter.parse(bytes, options: Self.options(for: try Self.vector(name)))
        let expires = try #require(tokens.compactMap(\.expires).first)
        #expect(try TokenImporter.parse(bytes, options: Self.options(for: try Self.vector(name), now: expires)).count == tokens.count)
        let error = importError(bytes, Self.options(for: try Self.vector(name), now: expires + 1))
        #expect(error?.code == .expired)
        #expect(error?.message.contains("TOTP-0001") == true)
    }
}
