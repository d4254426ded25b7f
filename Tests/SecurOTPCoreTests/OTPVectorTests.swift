import Testing
import SecurOTPCore

@Suite struct OTPVectorTests {
    nonisolated(unsafe) static let oath = (try? VectorFile.load("oath.json"))?.table("oath") ?? [:]

    @Test func vectorFileIsPresent() {
        #expect(Self.oath.list("hotp_rfc4226").count >= 10)
        #expect(Self.oath.list("totp_rfc6238").count >= 18)
    }

    @Test(arguments: OTPVectorTests.oath.list("hotp_rfc4226").indices)
    func hotpRFC4226(index: Int) throws {
        let vector = Self.oath.list("hotp_rfc4226")[index]
        let key = try #require(vector.string("key_hex").flatMap(Hex.decode))
        let algorithm = try #require(vector.string("alg").flatMap(HashAlgorithm.init(name:)))
        let code = OTP.hotp(secret: SecretBytes(copying: key), counter: UInt64(try #require(vector.int("counter"))),
                            digits: try #require(vector.int("digits")), algorithm: algorithm)
        #expect(String(decoding: code, as: UTF8.self) == vector.string("otp"))
    }

    @Test(arguments: OTPVectorTests.oath.list("totp_rfc6238").indices)
    func totpRFC6238(index: Int) throws {
        let vector = Self.oath.list("totp_rfc6238")[index]
        let key = try #require(vector.string("key_hex").flatMap(Hex.decode))
        let algorithm = try #require(vector.string("alg").flatMap(HashAlgorithm.init(name:)))
        let code = OTP.totp(secret: SecretBytes(copying: key), unixTime: Int64(try #require(vector.int("time"))),
                            period: try #require(vector.int("step")), t0: Int64(try #require(vector.int("t0"))),
                            digits: try #require(vector.int("digits")), algorithm: algorithm)
        #expect(String(decoding: code, as: UTF8.self) == vector.string("otp"))
    }

    @Test func secondsRemainingCountsDownWithinAStep() {
        #expect(OTP.secondsRemaining(unixTime: 60, period: 30) == 30)
        #expect(OTP.secondsRemaining(unixTime: 89, period: 30) == 1)
        #expect(OTP.timeStep(unixTime: 59, period: 30) == 1)
        #expect(OTP.timeStep(unixTime: -1, period: 30) == nil)
    }
}
