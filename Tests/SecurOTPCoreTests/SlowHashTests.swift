import Testing
import SecurOTPCore

@Suite struct SlowHashTests {
    /// PBKDF2-HMAC-SHA256 known answers: RFC 7914 §11 (the two "passwd"/"Password" vectors,
    /// 64-byte output) and the SHA-256 counterparts of RFC 6070's vectors, as published with the
    /// scrypt and PBKDF2 test suites (also what Python's hashlib.pbkdf2_hmac gives).
    static let knownAnswers: [(password: String, salt: String, iterations: Int, hex: String)] = [
        ("password", "salt", 1, "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"),
        ("password", "salt", 2, "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"),
        ("password", "salt", 4096, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"),
        ("passwordPASSWORDpassword", "saltSALTsaltSALTsaltSALTsaltSALTsalt", 4096,
         "348c89dbcbd32b2f32d814b8116e84cf2b17347ebc1800181c4e2a1fb8dd53e1c635518c7dac47e9"),
        ("pass\u{0}word", "sa\u{0}lt", 4096, "89b69d0516f829893c696226650a8687"),
        ("passwd", "salt", 1,
         "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"),
        ("Password", "NaCl", 80000,
         "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"),
    ]

    @Test(arguments: SlowHashTests.knownAnswers.indices)
    func pbkdf2KnownAnswers(index: Int) throws {
        let vector = Self.knownAnswers[index]
        let expected = try #require(Hex.decode(vector.hex))
        let derived = try #require(Array(vector.password.utf8).withUnsafeBufferPointer {
            SlowHash.pbkdf2SHA256(password: $0, salt: Array(vector.salt.utf8), iterations: vector.iterations,
                                  length: expected.count)
        })
        #expect(derived.withUnsafeBytes { Hex.encode($0) } == vector.hex)
    }

    @Test func pbkdf2RefusesBadParameters() {
        let password: [UInt8] = Array("pw".utf8)
        password.withUnsafeBufferPointer { pw in
            #expect(SlowHash.pbkdf2SHA256(password: pw, salt: [1], iterations: 0, length: 32) == nil)
            #expect(SlowHash.pbkdf2SHA256(password: pw, salt: [1], iterations: -5, length: 32) == nil)
            #expect(SlowHash.pbkdf2SHA256(password: pw, salt: [1], iterations: .max, length: 32) == nil)
            #expect(SlowHash.pbkdf2SHA256(password: pw, salt: [1], iterations: 1, length: 0) == nil)
            #expect(SlowHash.pbkdf2SHA256(password: pw, salt: [1], iterations: 1, length: -1) == nil)
            #expect(SlowHash.pbkdf2SHA256(password: pw, salt: [1], iterations: 1, length: .max) == nil)
            #expect(SlowHash.pbkdf2SHA256(password: pw, salt: [], iterations: 1, length: 1) != nil)
        }
        // An empty password is a valid (if foolish) HMAC key.
        #expect([UInt8]().withUnsafeBufferPointer {
            SlowHash.pbkdf2SHA256(password: $0, salt: [1, 2], iterations: 2, length: 32)
        } != nil)
    }

    // MARK: - Records

    static let fast = SlowHash.iterationRange.lowerBound

    private func hash(_ secret: String, iterations: Int = SlowHashTests.fast) -> [UInt8]? {
        Array(secret.utf8).withUnsafeBufferPointer { SlowHash.hash($0, iterations: iterations) }
    }

    private func verify(_ secret: String, _ stored: [UInt8]) -> Bool {
        Array(secret.utf8).withUnsafeBufferPointer { SlowHash.verify($0, against: stored) }
    }

    @Test func roundTrip() throws {
        let record = try #require(hash("493817"))
        #expect(verify("493817", record))
        #expect(!verify("493818", record))
        #expect(!verify("49381", record))
        #expect(!verify("4938170", record))
        #expect(!verify("", record))
        // SecretBytes entry points agree.
        let secret = SecretBytes(copying: Array("493817".utf8))
        #expect(SlowHash.verify(secret, against: record))
        #expect(try SlowHash.verify(secret, against: #require(SlowHash.hash(secret, iterations: Self.fast))))
    }

    @Test func recordIsSelfDescribing() throws {
        let record = try #require(hash("recovery-code-1", iterations: 12_345))
        let text = String(decoding: record, as: UTF8.self)
        let fields = text.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        #expect(fields.count == 4)
        #expect(fields[0] == "pbkdf2-sha256")
        #expect(fields[1] == "12345")
        #expect(fields[2].count == 2 * SlowHash.saltLength && Hex.decode(fields[2]) != nil)
        #expect(fields[3].count == 2 * SlowHash.hashLength && Hex.decode(fields[3]) != nil)
        // The stored hash is PBKDF2 of the secret with the stored salt.
        let salt = try #require(Hex.decode(fields[2]))
        let derived = try #require(Array("recovery-code-1".utf8).withUnsafeBufferPointer {
            SlowHash.pbkdf2SHA256(password: $0, salt: salt, iterations: 12_345, length: 32)
        })
        #expect(derived.withUnsafeBytes { Hex.encode($0) } == fields[3])
    }

    @Test func saltsDiffer() throws {
        let first = try #require(hash("same"))
        let second = try #require(hash("same"))
        #expect(first != second)
        #expect(verify("same", first) && verify("same", second))
    }

    @Test func defaultRecordVerifies() throws {
        let record = try #require(Array("2468".utf8).withUnsafeBufferPointer { SlowHash.hash($0) })
        #expect(String(decoding: record, as: UTF8.self).hasPrefix("pbkdf2-sha256$\(SlowHash.defaultIterations)$"))
        #expect(verify("2468", record))
    }

    @Test func hashRefusesIterationsOutOfRange() {
        #expect(hash("x", iterations: SlowHash.iterationRange.lowerBound - 1) == nil)
        #expect(hash("x", iterations: SlowHash.iterationRange.upperBound + 1) == nil)
        #expect(hash("x", iterations: 0) == nil)
        #expect(hash("x", iterations: -1) == nil)
        #expect(hash("x", iterations: .max) == nil)
    }

    @Test func tamperedRecordsAreRefused() throws {
        let record = try #require(hash("1234"))
        let text = String(decoding: record, as: UTF8.self)
        let fields = text.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        let (salt, digest) = (fields[2], fields[3])
        func flip(_ hex: String, at index: Int) -> String {
            var bytes = Array(hex.utf8)
            bytes[index] = bytes[index] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            return String(decoding: bytes, as: UTF8.self)
        }
        let iterations = "\(Self.fast)"
        let tampered: [String] = [
            "pbkdf2-sha256$\(iterations)$\(salt)$\(flip(digest, at: 0))",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(flip(digest, at: 63))",
            "pbkdf2-sha256$\(iterations)$\(flip(salt, at: 5))$\(digest)",
            "pbkdf2-sha256$\(Self.fast + 1)$\(salt)$\(digest)",
            "pbkdf2-sha1$\(iterations)$\(salt)$\(digest)",
            "PBKDF2-SHA256$\(iterations)$\(salt)$\(digest)",
            "pbkdf2-sha256$0\(iterations)$\(salt)$\(digest)",
            "pbkdf2-sha256$\(iterations)$\(salt.uppercased())$\(digest)",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest.uppercased())",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest)00",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest.dropLast(2))",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest.dropLast())",
            "pbkdf2-sha256$\(iterations)$\(salt.dropLast(2))$\(digest)",
            "pbkdf2-sha256$\(iterations)$$\(digest)",
            "pbkdf2-sha256$\(iterations)$\(salt)$",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest)$",
            "pbkdf2-sha256$\(iterations)$\(salt)",
            "$pbkdf2-sha256$\(iterations)$\(salt)$\(digest)",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest) ",
            "pbkdf2-sha256$ \(iterations)$\(salt)$\(digest)",
            "pbkdf2-sha256$-\(iterations)$\(salt)$\(digest)",
            "pbkdf2-sha256$+\(iterations)$\(salt)$\(digest)",
            "pbkdf2-sha256$1$\(salt)$\(digest)",
            "pbkdf2-sha256$9999$\(salt)$\(digest)",
            "pbkdf2-sha256$\(SlowHash.iterationRange.upperBound + 1)$\(salt)$\(digest)",
            "pbkdf2-sha256$999999999$\(salt)$\(digest)",
            "pbkdf2-sha256$99999999999999999999999999$\(salt)$\(digest)",
            "pbkdf2-sha256$\(iterations)$\(salt)xz$\(digest)",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest.dropLast())g",
            "pbkdf2-sha256$\(iterations)$\(String(repeating: "ab", count: 65))$\(digest)",
            "pbkdf2-sha256$\(iterations)$\(salt)$\(digest)" + String(repeating: "0", count: 300),
            "", "$", "$$$", "pbkdf2-sha256", "pbkdf2-sha256$$$",
        ]
        for stored in tampered {
            #expect(!verify("1234", Array(stored.utf8)), "accepted \(stored)")
        }
        #expect(verify("1234", record))
        #expect(!verify("1234", record + [0]))
        #expect(!verify("1234", Array(record.dropLast())))
    }

    /// Random bytes and random mutations of a real record: refused, never a trap.
    @Test func fuzzedRecordsNeverTrap() throws {
        var generator = SystemRandomNumberGenerator()
        let record = try #require(hash("0000"))
        let alphabet = Array("pbkdf2-sha256$0123456789abcdefABCDEF".utf8) + [0, 0xff, 0x24, 0x20]
        for round in 0..<300 {
            var bytes = record
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                    alphabet.randomElement(using: &generator) ?? 0
                }
            } else {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[index] = alphabet.randomElement(using: &generator) ?? 0
                case 1: bytes.remove(at: index)
                default: bytes.insert(alphabet.randomElement(using: &generator) ?? 0, at: index)
                }
            }
            if bytes != record {
                // A mutation may still be a well-formed record (for another salt or hash): it must not verify.
                #expect(!verify("0000", bytes))
            }
        }
    }
}
