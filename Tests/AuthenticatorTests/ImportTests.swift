import Foundation
import SecurOTPAuthenticator
import SecurOTPCore
import SecurOTPImport
import Testing

/// Every format the admin CLI imports, into the user's store: what is kept, what codes come
/// out (oathtool, stoken), and the refusals — wrong password, another device's binding,
/// expired, tampered, duplicates — after which nothing was written.
@Suite("Authenticator import: every format, all or nothing")
struct ImportTests {
    @Test("otpauth URIs: TOTP and HOTP with their parameters, issuer, account and default nickname")
    func otpauth() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let uris = try #require((try Vectors.json("otpauth.json")["otpauth"] as? [String: Any])?["uris"] as? [[String: Any]])
        for entry in uris {
            let uri = try #require(entry["uri"] as? String)
            let parsed = try #require(entry["parsed"] as? [String: Any])
            let token = try #require(try store.importText(uri).first, "\(uri)")
            #expect(token.kind.rawValue == parsed["type"] as? String && token.digits == parsed["digits"] as? Int, "\(uri)")
            #expect(token.algorithm.name == parsed["algorithm"] as? String && token.issuer == (parsed["issuer"] as? String ?? ""), "\(uri)")
            #expect(token.account == parsed["account"] as? String && token.nickname == String((parsed["account"] as? String ?? "").prefix(32)))
            #expect(token.source == "otpauth" && token.serial.count == 10 && token.pinMode == .none)
            let hex = try #require(parsed["secret_hex"] as? String)
            for code in entry["codes"] as? [[String: Any]] ?? [] {
                let otp = try #require(code["otp"] as? String)
                if let time = code["time"] as? Int {
                    #expect(try store.codes(serial: token.serial, pin: nil, now: Int64(time)).current == otp, "\(uri) at \(time)")
                    #expect(otp == (try Tool.oathtool(hex: hex, algorithm: token.algorithm, digits: token.digits, period: token.period, at: Int64(time))))
                } else if let counter = code["counter"] as? Int {
                    #expect(token.counter == UInt64(counter) && token.period == 0)
                    #expect(try store.codes(serial: token.serial, pin: nil, now: Scratch.now).current == otp, "\(uri) counter \(counter)")
                }
            }
        }
        #expect(try store.tokens().count == uris.count)
    }

    @Test("Google Authenticator export: every account of the batch, codes as oathtool's")
    func migration() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let migration = try #require((try Vectors.json("otpauth.json")["otpauth"] as? [String: Any])?["migration"] as? [String: Any])
        let expected = try #require((migration["decoded"] as? [String: Any])?["otp_parameters"] as? [[String: Any]])
        let tokens = try store.importText(try #require(migration["uri"] as? String))
        #expect(tokens.count == expected.count)
        for (token, entry) in zip(tokens, expected) {
            #expect(token.kind.rawValue == entry["type"] as? String && token.account == entry["name"] as? String && token.source == "otpauth-migration")
            let hex = try #require(entry["secret_hex"] as? String)
            let codes = try store.codes(serial: token.serial, pin: nil, now: Scratch.now)
            let counter = UInt64(entry["counter"] as? Int ?? 0)
            let oracle = token.kind == .hotp ? try Tool.oathtool(hex: hex, digits: 6, counter: counter)
                                             : try Tool.oathtool(hex: hex, digits: 6, at: Scratch.now)
            #expect(codes.current == oracle, "\(entry["name"] ?? "")")
        }
    }

    struct PSKCCase: Sendable, CustomTestStringConvertible {
        let file: String
        let password: String?
        let key: String?
        var testDescription: String { file }
    }

    @Test("PSKC: plain, pre-shared key and PBKDF2 files; serials, expiry and codes", arguments: [
        PSKCCase(file: "plain.pskcxml", password: nil, key: nil),
        PSKCCase(file: "psk-aes128cbc.pskcxml", password: nil, key: "12345678901234567890123456789012"),
        PSKCCase(file: "pbkdf2-aes128cbc.pskcxml", password: "qwerty", key: nil),
    ])
    func pskc(_ test: PSKCCase) throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let tokens = try store.importTokens(from: try Vectors.file("pskc/" + test.file), password: test.password.map { Array($0.utf8) },
                                            transportKey: test.key.flatMap(Hex.decode).map { SecretBytes(copying: $0) },
                                            nickname: "vendor", now: Scratch.now)
        #expect(tokens.map(\.serial) == ["987654321", "987654322"])
        #expect(tokens.allSatisfy { $0.source == "pskc" && $0.nickname == "vendor" })
        let hotp = tokens[0], totp = tokens[1]
        #expect(hotp.kind == .hotp && hotp.digits == 6 && hotp.counter == 0)
        #expect(totp.kind == .totp && totp.algorithm == .sha256 && totp.digits == 8 && CalendarDate.text(totp.expires) == "2035-12-31")
        let hotpHex = Hex.encode(Array("12345678901234567890".utf8))
        let totpHex = Hex.encode(Array("12345678901234567890123456789012".utf8))
        #expect(try store.codes(serial: hotp.serial, pin: nil, now: Scratch.now).current == (try Tool.oathtool(hex: hotpHex, digits: 6, counter: 0)))
        #expect(try store.codes(serial: totp.serial, pin: nil, now: Scratch.now).current
                == (try Tool.oathtool(hex: totpHex, algorithm: .sha256, digits: 8, period: totp.period, at: Scratch.now)))
    }

    @Test("SecurID .sdtid files, with and without a file password, give stoken's tokencodes", arguments: ["A", "B"])
    func sdtid(_ letter: String) throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let vector = try Vectors.securIDToken(letter)
        let xml = try #require(vector["sdtid_xml"] as? String)
        let token = try #require(try store.importText(xml, password: vector["sdtid_password"] as? String).first)
        #expect(token.serial == vector["serial"] as? String && token.kind == .securid && token.source == "sdtid")
        let export = letter == "A" ? ("A-v2", nil) : ("B-v2-pass", "Tr0ub4dor&3") as (String, String?)
        let ctf = try Vectors.securIDExport(export.0)
        #expect(try store.codes(serial: token.serial, pin: nil, now: Scratch.now).current == (try Tool.stokenCode(ctf, at: Scratch.now, password: export.1)))
    }

    @Test("A SecurID token bound to this authenticator's binding ID imports; stoken made it for that ID just now",
          arguments: ["v2", "v3"])
    func boundToThisAuthenticator(_ ctfVersion: String) throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let plain = try Vectors.securIDExport("A-v2")
        let bound = try Tool.stoken(["export", "--token=\(plain)", "--new-devid=\(store.bindingID)"] + (ctfVersion == "v3" ? ["--v3"] : []))
        #expect(bound != plain && !bound.isEmpty)
        let token = try #require(try store.importText(bound).first)
        #expect(try store.codes(serial: token.serial, pin: nil, now: Scratch.now).current == (try Tool.stokenCode(plain, at: Scratch.now)))

        // The same string in another authenticator (another key file): refused as bound elsewhere.
        let other = try Scratch()
        let error = try #require(caught { try other.open().importText(bound) } as? ImportError)
        #expect(error.code == .deviceBinding && error.message.contains("bound to another device"), "\(error)")
        #expect(try other.open().tokens().isEmpty)
    }

    @Test("Refusals write nothing: wrong or missing password, another device, expired, tampered, one bad line")
    func refusalsWriteNothing() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let a = try Vectors.securIDExport("A-v2")
        var tampered = Array(a)
        tampered[30] = tampered[30] == "7" ? "8" : "7"
        let b = try #require(try Vectors.securIDToken("B")["sdtid_xml"] as? String)
        let cases: [(String, String?, ImportError.Code)] = [
            (b, "hunter2-not-it", .password),
            (b, nil, .password),
            (try Vectors.securIDExport("B-v2-pass"), "Tr0ub4dor&4", .password),
            (try Vectors.securIDExport("A-v2-numeric-guid-devid"), nil, .deviceBinding),
            (String(tampered), nil, .checksum),
            ("otpauth://totp/T:t?secret=JBSWY3DPEHPK3PXP\n" + "otpauth://totp/T:u?secret=not*base32", nil, .malformed),
        ]
        for (source, password, code) in cases {
            let error = try #require(caught { try store.importText(source, password: password) } as? ImportError, "\(source.prefix(40))")
            #expect(error.code == code, "\(source.prefix(40)): \(error)")
            if let password { #expect(!error.message.contains(password), "the password is in the message") }
        }
        // Expired: token A's last day is 2035-12-31.
        let expired = try #require(caught { try store.importText(a, now: 2_100_000_000) } as? ImportError)
        #expect(expired.code == .expired && expired.message.contains("2035-12-31"), "\(expired)")
        #expect(try store.tokens().isEmpty)
        #expect(AuthenticatorStore.tokenCount(scratch.paths) == 0)
    }

    @Test("An expired PSKC key is refused even when the importer's clock lets it through; nothing written")
    func expiredByStore() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let expires: Int64 = 2_000_000_000
        let token = ImportedToken(kind: .oath(OATHParameters(kind: .totp)), secret: SecretBytes(copying: Array("12345678901234567890".utf8)),
                                  account: "x", expires: expires, source: "pskc")
        let fine = ImportedToken(kind: .oath(OATHParameters(kind: .totp)), secret: SecretBytes(copying: Array("12345678901234567890".utf8)),
                                 account: "y", source: "pskc")
        let error = try #require(caught { try store.add([fine, token], nickname: nil, now: expires) } as? AuthenticatorError)
        #expect(error.code == .invalidInput && error.message.contains("expired on 2033-05-18"), "\(error)")
        #expect(try store.tokens().isEmpty, "the good token before it was not kept either")
    }

    @Test("The same serial twice is refused, in one import or across imports")
    func duplicates() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let a = try Vectors.securIDExport("A-v2")
        _ = try store.importText(a)
        let again = try #require(caught { try store.importText(a) } as? AuthenticatorError)
        #expect(again.code == .invalidInput && again.message.contains("already in this authenticator"), "\(again)")
        let twice = try #require(caught { try store.importText(try Vectors.securIDExport("A-v2-blocks") + "\n" + a) } as? AuthenticatorError)
        #expect(twice.code == .invalidInput)
        #expect(try store.tokens().count == 1)
    }

    @Test("--nickname: applied to every token, and refused when longer than 32 characters")
    func nicknameOption() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let input = Array("otpauth://totp/T:t?secret=JBSWY3DPEHPK3PXP".utf8)
        let long = try #require(caught { try store.importTokens(from: input, password: nil, transportKey: nil, nickname: String(repeating: "n", count: 33), now: Scratch.now) } as? AuthenticatorError)
        #expect(long.code == .invalidInput && long.message.contains("at most 32"), "\(long)")
        let token = try #require(try store.importTokens(from: input, password: nil, transportKey: nil, nickname: "phone", now: Scratch.now).first)
        #expect(token.nickname == "phone")
    }
}
