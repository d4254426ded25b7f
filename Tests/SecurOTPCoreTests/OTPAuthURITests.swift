import Testing
import SecurOTPCore

@Suite struct OTPAuthURITests {
    nonisolated(unsafe) static let uris = (try? VectorFile.load("otpauth.json"))?.table("otpauth")?.list("uris") ?? []

    @Test func vectorFileIsPresent() { #expect(Self.uris.count >= 5) }

    @Test(arguments: OTPAuthURITests.uris.indices)
    func parsesSharedVector(index: Int) throws {
        let vector = Self.uris[index]
        let expected = try #require(vector.table("parsed"))
        let uri = try OTPAuthURI.parse(try #require(vector.string("uri")))
        #expect(uri.parameters.kind.rawValue == expected.string("type"))
        #expect(uri.account == expected.string("account"))
        #expect(uri.issuer == expected.string("issuer"))
        #expect(uri.issuerLabelPrefix == expected.string("issuer_label_prefix"))
        #expect(uri.secret.withUnsafeBytes { Hex.encode($0) } == expected.string("secret_hex"))
        #expect(uri.parameters.algorithm.name == expected.string("algorithm"))
        #expect(uri.parameters.digits == expected.int("digits"))
        if let period = expected.int("period") { #expect(uri.parameters.period == period) }
        if let counter = expected.int("counter") { #expect(uri.parameters.counter == UInt64(counter)) }

        for code in vector.list("codes") {
            let value: [UInt8]
            if let time = code.int("time") {
                value = OTP.totp(secret: uri.secret, unixTime: Int64(time), period: uri.parameters.period,
                                 digits: uri.parameters.digits, algorithm: uri.parameters.algorithm)
            } else {
                value = OTP.hotp(secret: uri.secret, counter: UInt64(try #require(code.int("counter"))),
                                 digits: uri.parameters.digits, algorithm: uri.parameters.algorithm)
            }
            #expect(String(decoding: value, as: UTF8.self) == code.string("otp"))
        }
    }

    /// Rendering then parsing gives back every parameter.
    @Test(arguments: [
        OATHParameters(kind: .totp),
        OATHParameters(kind: .totp, algorithm: .sha256, digits: 8, period: 60),
        OATHParameters(kind: .totp, algorithm: .sha512, digits: 7, period: 1),
        OATHParameters(kind: .hotp, counter: 0),
        OATHParameters(kind: .hotp, algorithm: .sha512, digits: 8, counter: 123_456_789),
    ])
    func roundTrip(parameters: OATHParameters) throws {
        let secret = try #require(SecretBytes.random(count: 20))
        let original = OTPAuthURI(parameters: parameters, secret: secret, account: "alice@host 1", issuer: "ACME Co & Ops")
        let text = original.render()
        let parsed = try OTPAuthURI.parse(text)
        #expect(parsed.parameters == parameters)
        #expect(parsed.secret.constantTimeEquals(secret))
        #expect(parsed.account == "alice@host 1")
        #expect(parsed.issuer == "ACME Co & Ops")
        #expect(!text.contains(" "))
        #expect(text.contains("algorithm=") == (parameters.algorithm != .sha1))
        #expect(text.contains("digits=") == (parameters.digits != 6))
        #expect(text.contains("counter=") == (parameters.kind == .hotp))
    }

    /// Found by fuzz/harnesses/otpauth.swift: labels whose issuer or account holds a ':', or
    /// whose ':' carries a combining mark, parsed or rendered into a different account.
    @Test(arguments: [
        ("otpauth://totp/Am?secret=JBSWY3DP&issuer=Auth://C", "Am", "Auth://C"),
        ("otpauth://totp/ACME:%CC%B9alice?secret=JBSWY3DP", "\u{339}alice", "ACME"),
        ("otpauth://totp/%20%20bob?secret=JBSWY3DP", "bob", nil),
        ("otpauth://totp/ACME:a:b?secret=JBSWY3DP", "a:b", "ACME"),
    ] as [(String, String, String?)])
    func labelSplitsAtTheFirstColonByteAndRendersBack(text: String, account: String, issuer: String?) throws {
        let parsed = try OTPAuthURI.parse(text)
        #expect(parsed.account == account)
        #expect(parsed.issuer == issuer)
        let again = try OTPAuthURI.parse(parsed.render())
        #expect(again.account == account)
        #expect(again.issuer.flatMap { $0.isEmpty ? nil : $0 } == issuer)
    }

    @Test func accountWithColonAndNoIssuerRendersBack() throws {
        let secret = SecretBytes(copying: [1, 2, 3, 4, 5])
        let uri = OTPAuthURI(parameters: OATHParameters(kind: .totp), secret: secret, account: "a:b", issuer: nil)
        let again = try OTPAuthURI.parse(uri.render())
        #expect(again.account == "a:b")
        #expect(again.issuer.flatMap { $0.isEmpty ? nil : $0 } == nil)
    }

    @Test(arguments: [
        "http://totp/a?secret=JBSWY3DP",
        "otpauth://motp/a?secret=JBSWY3DP",
        "otpauth://totp/a?issuer=x",
        "otpauth://totp/a?secret=JBSWY3D1",
        "otpauth://totp/a?secret=JBSWY3DP&digits=9",
        "otpauth://totp/a?secret=JBSWY3DP&period=0",
        "otpauth://totp/a?secret=JBSWY3DP&algorithm=MD5",
        "otpauth://hotp/a?secret=JBSWY3DP",
        "otpauth://totp/a%ZZ?secret=JBSWY3DP",
        "otpauth://totp/?secret=JBSWY3DP",
        "otpauth://totp/a?secret",
    ])
    func rejectsMalformed(text: String) {
        #expect(throws: OTPAuthError.self) { try OTPAuthURI.parse(text) }
    }
}
