import Foundation
import SecurOTPAuthenticator
import SecurOTPCore
import Testing

/// The codes the authenticator shows, checked against independent implementations run now:
/// oathtool for TOTP and HOTP, stoken for RSA SecurID (with and without a PIN added).
@Suite("Authenticator codes against oathtool and stoken")
struct CodeOracleTests {
    static let times: [Int64] = [59, 1_111_111_109, 1_234_567_890, 1_700_000_000, 1_899_999_999, 2_000_000_000]

    struct Profile: Sendable, CustomTestStringConvertible {
        let algorithm: String
        let digits: Int
        let period: Int
        var testDescription: String { "\(algorithm)/\(digits)/\(period)s" }
    }

    @Test("TOTP: current and next code and seconds left agree with oathtool", arguments: [
        Profile(algorithm: "SHA1", digits: 6, period: 30),
        Profile(algorithm: "SHA256", digits: 8, period: 60),
        Profile(algorithm: "SHA512", digits: 7, period: 45),
    ])
    func totp(_ profile: Profile) throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let hex = "3132333435363738393031323334353637383930313233343536373839303132"
        let secret = SecretBytes(copying: try #require(Hex.decode(hex)))
        let uri = "otpauth://totp/Test:t?secret=\(Base32.encode(secret))&algorithm=\(profile.algorithm)&digits=\(profile.digits)&period=\(profile.period)"
        let token = try #require(try store.importText(uri).first)
        let algorithm = try #require(HashAlgorithm(name: profile.algorithm))
        for time in Self.times + [Int64(Date().timeIntervalSince1970)] {
            let codes = try store.codes(serial: token.serial, pin: nil, now: time)
            let oath = { (at: Int64) in try Tool.oathtool(hex: hex, algorithm: algorithm, digits: profile.digits, period: profile.period, at: at) }
            #expect(codes.current == (try oath(time)), "current at \(time)")
            #expect(codes.next == (try oath(time + Int64(profile.period))), "next at \(time)")
            // seconds_remaining is right when the code still holds at its last second and changes after it.
            let left = try #require(codes.secondsRemaining)
            #expect((1...profile.period).contains(left))
            #expect(try oath(time + Int64(left) - 1) == codes.current && oath(time + Int64(left)) == codes.next, "seconds left \(left) at \(time)")
            #expect(codes.counter == nil && !codes.pinApplied)
        }
    }

    @Test("HOTP: each code is oathtool's for the stored counter, which moves on and survives reopening")
    func hotpAdvances() throws {
        let scratch = try Scratch()
        let hex = "3132333435363738393031323334353637383930"
        let serial = try #require(try scratch.open().importText("otpauth://hotp/Test:h?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&counter=5").first).serial
        // Two connections, as two terminals running `code` would be: never the same counter twice.
        let first = try scratch.open(create: false)
        let second = try scratch.open(create: false)
        var shown: [UInt64] = []
        for (index, store) in [first, second, first, second, second].enumerated() {
            let codes = try store.codes(serial: serial, pin: nil, now: Scratch.now)
            let counter = try #require(codes.counter)
            #expect(counter == 5 + UInt64(index))
            #expect(codes.current == (try Tool.oathtool(hex: hex, digits: 6, counter: counter)), "counter \(counter)")
            #expect(codes.next == nil && codes.secondsRemaining == nil)
            shown.append(counter)
        }
        #expect(shown == [5, 6, 7, 8, 9])
        #expect(try scratch.open(create: false).token(serial: serial).counter == 10)
    }

    struct SecurIDCase: Sendable, CustomTestStringConvertible {
        let letter: String
        let export: String
        let password: String?
        let pins: [String]
        var testDescription: String { "token \(letter) (\(export))" }
    }

    @Test("SecurID PINPad: tokencodes and next tokencodes, bare and with the PIN added, agree with stoken", arguments: [
        SecurIDCase(letter: "A", export: "A-v2", password: nil, pins: ["1234", "000000", "987654"]),
        SecurIDCase(letter: "B", export: "B-v2-pass", password: "Tr0ub4dor&3", pins: ["2468", "97531", "24681357"]),
    ])
    func securID(_ test: SecurIDCase) throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let ctf = try Vectors.securIDExport(test.export)
        let vector = try Vectors.securIDToken(test.letter)
        let token = try #require(try store.importText(ctf, password: test.password).first)
        #expect(token.kind == .securid && token.pinMode == .addedByToken)
        #expect(token.serial == vector["serial"] as? String && token.digits == vector["digits"] as? Int && token.period == vector["interval"] as? Int)
        let interval = Int64(token.period)
        for (index, time) in Self.times.dropFirst(3).enumerated() {
            let bare = try store.codes(serial: token.serial, pin: nil, now: time)
            #expect(bare.current == (try Tool.stokenCode(ctf, at: time, password: test.password)), "bare at \(time)")
            #expect(bare.next == (try Tool.stokenCode(ctf, at: time + interval, password: test.password)), "next at \(time)")
            let left = try #require(bare.secondsRemaining)
            #expect(try Tool.stokenCode(ctf, at: time + Int64(left) - 1, password: test.password) == bare.current, "seconds left at \(time)")

            let pin = test.pins[index % test.pins.count]
            let withPIN = try store.codes(serial: token.serial, pin: Array(pin.utf8), now: time)
            #expect(withPIN.pinApplied)
            #expect(withPIN.current == (try Tool.stokenCode(ctf, at: time, pin: pin, password: test.password)), "PIN \(pin) at \(time)")
            #expect(withPIN.next == (try Tool.stokenCode(ctf, at: time + interval, pin: pin, password: test.password)), "next, PIN \(pin) at \(time)")
        }
    }

    @Test("PINs: only for PINPad tokens, 4 to 8 digits, no longer than the code, never in a message")
    func pinRules() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let securID = try #require(try store.importText(try Vectors.securIDExport("A-v2")).first).serial
        let totp = try #require(try store.importText("otpauth://totp/T:t?secret=JBSWY3DPEHPK3PXP").first).serial
        for (serial, pin, says) in [(totp, "4711", "does not add a PIN"), (securID, "47a1", "4 to 8 digits"), (securID, "471", "4 to 8 digits"),
                                    (securID, "4711235", "at most 6 digits"), (securID, "123456789", "4 to 8 digits")] {
            let error = try #require(caught { try store.codes(serial: serial, pin: Array(pin.utf8), now: Scratch.now) } as? AuthenticatorError)
            #expect(error.code == .invalidInput && error.message.contains(says), "\(serial) PIN \(pin): \(error)")
            #expect(!error.message.contains(pin), "the PIN is in the message: \(error)")
        }
    }

    @Test("An expired token shows no codes, and says since when")
    func expired() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let token = try #require(try store.importText(try Vectors.securIDExport("A-v2")).first)
        #expect(token.expires > Scratch.now)
        #expect(try store.codes(serial: token.serial, pin: nil, now: token.expires - 1).current.count == 6, "its last second still works")
        let error = try #require(caught { try store.codes(serial: token.serial, pin: nil, now: token.expires) } as? AuthenticatorError)
        #expect(error.code == .invalidInput && error.message.contains("expired on 2036-01-01"), "\(error)")
    }
}
