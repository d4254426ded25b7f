import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// An independent implementation writes the files: python-pskc (PyPI `python-pskc`) generates
/// PSKC containers at test time with random secrets, keys, passwords and salts; securotp must
/// recover exactly what it put in, and `oathtool` must agree with the codes of what was read.
/// A missing python-pskc or oathtool fails these tests (with the install command); they do not skip.
@Suite struct PSKCOracleTests {
    struct KeySpec: Codable, Sendable {
        var kind: String
        var length: Int
        var digits: Int
        var counter: UInt64?
        var period: Int?
        var hash: String?
    }

    struct CaseSpec: Codable, Sendable {
        var name: String
        var encryption: String?
        var algorithm: String?
        var prf: String?
        var mac: String?
        var iterations: Int?
        var fields: [String]?
        var keys: [KeySpec]
    }

    struct GeneratedToken: Codable, Sendable {
        var kind: String
        var digits: Int
        var counter: UInt64?
        var period: Int?
        var hash: String?
        var secret_hex: String
        var serial: String
        var issuer: String
        var account: String
    }

    struct GeneratedFile: Codable, Sendable {
        var name: String
        var xml: String
        var password: String?
        var key_hex: String?
        var tokens: [GeneratedToken]
    }

    struct Generated: Codable, Sendable {
        var version: String
        var files: [GeneratedFile]
    }

    static func hotp(_ length: Int = 20, digits: Int = 6) -> KeySpec {
        KeySpec(kind: "hotp", length: length, digits: digits, counter: unambiguousCounter())
    }

    /// A random counter whose big-endian bytes are not all ASCII digits. python-pskc writes an
    /// encrypted counter as big-endian bytes and, as the importer does, reads bytes that are all
    /// digits as decimal text (PSKC leaves the form open): 3748656 (0x393330) comes back as 930
    /// from either reader (CI saw it), so such counters would test the oracle's ambiguity only.
    static func unambiguousCounter() -> UInt64 {
        while true {
            let counter = UInt64.random(in: 0...10_000_000)
            var bytes: [UInt8] = []
            var rest = counter
            repeat { bytes.append(UInt8(truncatingIfNeeded: rest)); rest >>= 8 } while rest > 0
            if !bytes.allSatisfy({ (0x30...0x39).contains($0) }) { return counter }
        }
    }

    static func totp(_ length: Int, digits: Int, period: Int, hash: String) -> KeySpec {
        KeySpec(kind: "totp", length: length, digits: digits, period: period, hash: hash)
    }

    static let cases: [CaseSpec] = [
        CaseSpec(name: "plaintext", keys: [hotp(), totp(20, digits: 6, period: 30, hash: "SHA1")]),
        CaseSpec(name: "pbkdf2-aes128-cbc", encryption: "pbkdf2", algorithm: "aes128-cbc", iterations: 1000,
                 keys: [hotp(), totp(32, digits: 8, period: 30, hash: "SHA256")]),
        CaseSpec(name: "pbkdf2-aes256-cbc-prf-sha256", encryption: "pbkdf2", algorithm: "aes256-cbc", prf: "hmac-sha256",
                 iterations: 2000, fields: ["secret", "counter"], keys: [hotp(digits: 8), totp(64, digits: 7, period: 60, hash: "SHA512")]),
        CaseSpec(name: "psk-aes128-cbc", encryption: "psk", algorithm: "aes128-cbc",
                 keys: [hotp(), totp(64, digits: 8, period: 30, hash: "SHA512")]),
        CaseSpec(name: "psk-aes256-cbc-hmac-sha256", encryption: "psk", algorithm: "aes256-cbc", mac: "hmac-sha256",
                 fields: ["secret", "counter", "time_interval"], keys: [hotp(32), totp(20, digits: 6, period: 45, hash: "SHA1")]),
        CaseSpec(name: "psk-kw-aes128", encryption: "psk", algorithm: "kw-aes128", fields: ["secret", "counter"],
                 keys: [hotp(20), totp(32, digits: 8, period: 60, hash: "SHA256")]),
        CaseSpec(name: "psk-kw-aes256", encryption: "psk", algorithm: "kw-aes256",
                 keys: [hotp(16), totp(24, digits: 6, period: 30, hash: "SHA1")]),
        CaseSpec(name: "psk-kw-aes192", encryption: "psk", algorithm: "kw-aes192", fields: ["secret", "counter"],
                 keys: [hotp(24), totp(40, digits: 8, period: 30, hash: "SHA512")]),
    ]

    /// Writes one PSKC file per case spec (JSON on stdin) and prints the files with their
    /// secrets and credentials as JSON.
    static let script = """
        import io, json, os, secrets, sys
        import pskc

        def build(case):
            container = pskc.PSKC()
            written = []
            for spec in case['keys']:
                secret = os.urandom(spec['length'])
                fields = dict(secret=secret, algorithm='urn:ietf:params:xml:ns:keyprov:pskc:' + spec['kind'],
                              response_encoding='DECIMAL', response_length=spec['digits'],
                              manufacturer='iana.32473', serial=secrets.token_hex(5),
                              issuer='Oracle ' + secrets.token_hex(3), key_userid=secrets.token_hex(4) + '@example.org')
                if spec['kind'] == 'hotp':
                    fields['counter'] = spec['counter']
                else:
                    fields['time_interval'] = spec['period']
                    fields['time_offset'] = 0
                    if spec['hash'] != 'SHA1':
                        fields['algorithm_suite'] = 'HMAC-' + spec['hash']
                container.add_key(**fields)
                written.append(dict(spec, secret_hex=secret.hex(), serial=fields['serial'],
                                    issuer=fields['issuer'], account=fields['key_userid']))
            result = dict(name=case['name'], tokens=written)
            if case.get('encryption') == 'pbkdf2':
                password = secrets.token_urlsafe(12)
                container.encryption.setup_pbkdf2(password, algorithm=case['algorithm'], iterations=case['iterations'],
                                                  prf=case.get('prf'), fields=case.get('fields'))
                result['password'] = password
            elif case.get('encryption') == 'psk':
                container.encryption.setup_preshared_key(algorithm=case['algorithm'], key_name='Oracle transport key',
                                                         fields=case.get('fields'))
                if case.get('mac'):
                    container.mac.setup(algorithm=case['mac'])
                result['key_hex'] = container.encryption.key.hex()
            out = io.BytesIO()
            container.write(out)
            result['xml'] = out.getvalue().decode()
            return result

        cases = json.load(sys.stdin)
        print(json.dumps(dict(version=pskc.__version__, files=[build(case) for case in cases])))
        """

    static let generated: Result<Generated, Oracle.Failure> = {
        do {
            _ = try Oracle.requirePythonPSKC()
            let input = String(decoding: try JSONEncoder().encode(cases), as: UTF8.self)
            let output = try Oracle.run(["python3", "-c", script], stdin: input)
            return .success(try JSONDecoder().decode(Generated.self, from: Data(output.utf8)))
        } catch let failure as Oracle.Failure {
            return .failure(failure)
        } catch {
            return .failure(Oracle.Failure(description: "python-pskc generation failed: \(error)"))
        }
    }()

    static func file(_ name: String) throws -> GeneratedFile {
        let generated = try generated.get()
        return try #require(generated.files.first { $0.name == name })
    }

    static func credentials(for file: GeneratedFile) -> ImportOptions {
        SecurOTPImportTests.options(password: file.password, transportKeyHex: file.key_hex)
    }

    @Test func pythonPSKCIsInstalled() throws {
        let version = try Oracle.requirePythonPSKC()
        #expect(!version.isEmpty)
    }

    @Test(arguments: PSKCOracleTests.cases.map(\.name))
    func importsWhatPythonPSKCWrote(name: String) throws {
        let file = try Self.file(name)
        let tokens = try TokenImporter.parse(Array(file.xml.utf8), options: Self.credentials(for: file))
        try #require(tokens.count == file.tokens.count)
        for (token, expected) in zip(tokens, file.tokens) {
            let oath = try #require(token.oath)
            #expect(token.secretHex == expected.secret_hex)
            #expect(oath.kind.rawValue == expected.kind)
            #expect(oath.digits == expected.digits)
            #expect(oath.algorithm.name == (expected.hash ?? "SHA1"))
            if let counter = expected.counter { #expect(oath.counter == counter) }
            if let period = expected.period { #expect(oath.period == period) }
            #expect(token.serial == expected.serial)
            #expect(token.issuer == expected.issuer)
            #expect(token.account == expected.account)
            #expect(token.source == "pskc")
        }
    }

    /// The imported tokens produce the codes oathtool computes from the secrets python-pskc chose.
    @Test(arguments: PSKCOracleTests.cases.map(\.name))
    func codesAgreeWithOathtool(name: String) throws {
        let file = try Self.file(name)
        let tokens = try TokenImporter.parse(Array(file.xml.utf8), options: Self.credentials(for: file))
        for (token, expected) in zip(tokens, file.tokens) {
            // Rebuild the token from python-pskc's own record of the secret, so a wrong import
            // cannot agree with itself.
            let reference = ImportedToken(kind: token.kind, secret: SecretBytes(copying: try #require(Hex.decode(expected.secret_hex))),
                                          source: "reference")
            let time = Int64.random(in: 0...4_000_000_000)
            #expect(token.code(at: time) == (try Oracle.oathtool(reference, time: time)), "\(name) at \(time)")
        }
    }

    @Test(arguments: PSKCOracleTests.cases.filter { $0.encryption != nil }.map(\.name))
    func wrongOrMissingCredentialsAreRefused(name: String) throws {
        let file = try Self.file(name)
        let wrong: ImportOptions
        if file.password != nil {
            wrong = options(password: (file.password ?? "") + "x")
        } else {
            let key = try #require(file.key_hex.flatMap(Hex.decode))
            wrong = options(transportKeyHex: Hex.encode(key.map { $0 ^ 0x5A }))
        }
        let error = try #require(importError(file.xml, wrong))
        #expect(error.code == .password || error.code == .checksum, "\(error)")
        #expect(importError(file.xml, options())?.code == .password)
    }

    /// python-pskc cannot write the RFC 5649 URIs (kw-aes-128-pad …), so the `cryptography`
    /// package (a python-pskc dependency) wraps random secrets and the test writes the XML.
    @Test(arguments: [(16, 20), (24, 7), (32, 32), (16, 8)])
    func paddedKeyWrapFromCryptography(keyLength: Int, secretLength: Int) throws {
        _ = try Oracle.requirePythonPSKC()
        let output = try Oracle.run(["python3", "-c", """
            import os, sys
            from cryptography.hazmat.primitives.keywrap import aes_key_wrap_with_padding
            kek, secret = os.urandom(int(sys.argv[1])), os.urandom(int(sys.argv[2]))
            print(kek.hex(), secret.hex(), aes_key_wrap_with_padding(kek, secret).hex())
            """, String(keyLength), String(secretLength)])
        let fields = output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        try #require(fields.count == 3)
        let wrapped = try #require(Hex.decode(fields[2]))
        let base64 = Data(wrapped).base64EncodedString()
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <KeyContainer Version="1.0" xmlns="urn:ietf:params:xml:ns:keyprov:pskc"
                xmlns:ds="http://www.w3.org/2000/09/xmldsig#" xmlns:xenc="http://www.w3.org/2001/04/xmlenc#">
              <EncryptionKey><ds:KeyName>kek</ds:KeyName></EncryptionKey>
              <KeyPackage>
                <Key Id="pad" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
                  <AlgorithmParameters><ResponseFormat Length="6" Encoding="DECIMAL"/></AlgorithmParameters>
                  <Data>
                    <Secret><EncryptedValue>
                      <xenc:EncryptionMethod Algorithm="http://www.w3.org/2009/xmlenc11#kw-aes-\(keyLength * 8)-pad"/>
                      <xenc:CipherData><xenc:CipherValue>\(base64)</xenc:CipherValue></xenc:CipherData>
                    </EncryptedValue></Secret>
                    <Counter><PlainValue>3</PlainValue></Counter>
                  </Data>
                </Key>
              </KeyPackage>
            </KeyContainer>
            """
        let tokens = try importText(xml, options(transportKeyHex: fields[0]))
        #expect(tokens.map(\.secretHex) == [fields[1]])
        #expect(tokens.first?.oath?.counter == 3)
        let wrongKey = Hex.encode((try #require(Hex.decode(fields[0]))).map { $0 ^ 1 })
        #expect(importError(xml, options(transportKeyHex: wrongKey))?.code == .password)
    }
}
