import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// The storage-free rules a second backend uses: token rows, names, serials, new tokens,
/// recovery codes.
@Suite struct PublicRulesTests {
    func record() -> TokenRecord {
        var record = NewToken(kind: .securid, parameters: OATHParameters(kind: .totp, algorithm: .sha256, digits: 8, period: 60, counter: 9),
                              seed: SecretBytes(count: 16), nickname: "fob", issuer: "ACME", pinMode: .addedByToken, expires: 77,
                              source: "ctf").record(serial: "000123", user: "sam", created: 5)
        record.lastStep = 41
        record.lastUsed = 6
        record.hasPIN = true
        record.pinLength = 4
        record.pinChangeRequired = true
        record.drift = -3
        return record
    }

    @Test func aRowReadsBackAsTheRecordItWasWrittenFrom() {
        let record = record()
        #expect(TokenRecord(row: TokenRow(record)) == record)
        #expect(TokenRow(record).algorithm == "SHA256" && TokenRow(record).pinMode == "added" && TokenRow(record).kind == "securid")
    }

    @Test(arguments: [
        { (row: inout TokenRow) in row.kind = "totp2" },
        { (row: inout TokenRow) in row.algorithm = "MD5" },
        { (row: inout TokenRow) in row.pinMode = "both" },
        { (row: inout TokenRow) in row.digits = 11 },
        { (row: inout TokenRow) in row.period = 0 },
        { (row: inout TokenRow) in row.pinLength = 65 },
        { (row: inout TokenRow) in row.drift = 1_000_001 },
        // A counter no enrollment or login could leave; it would overflow the windows.
        { (row: inout TokenRow) in row.counter = -1 },
        { (row: inout TokenRow) in row.counter = .max - 5 },
    ] as [@Sendable (inout TokenRow) -> Void])
    func damagedRowsDoNotDecode(damage: @Sendable (inout TokenRow) -> Void) {
        var row = TokenRow(record())
        damage(&row)
        #expect(TokenRecord(row: row) == nil)
    }

    @Test("A user name may not start with @, which names a group's policy (Store.policySubject(group:))")
    func noUserNamedLikeAGroup() throws {
        let error = #expect(throws: StoreError.self) { try InputRules.validate(user: "@staff") }
        #expect(error?.message.contains("a leading @ names a group") == true, "\(String(describing: error))")
        #expect(throws: StoreError.self) { try Store.validate(user: Store.policySubject(group: "staff")) }
        try InputRules.validate(user: "staff@example.com")
    }

    @Test func hotpRowsNeedNoPeriod() {
        var row = TokenRow(record())
        row.kind = "hotp"
        row.period = 0
        #expect(TokenRecord(row: row)?.kind == .hotp)
    }

    @Test func namesSerialsAndNewTokens() throws {
        #expect(throws: StoreError(.invalidInput, "")) { try InputRules.validate(user: "a:b") }
        #expect(throws: StoreError(.invalidInput, "")) { try InputRules.validate(nickname: "tab\there") }
        try TokenSerial.check("SN-0001")
        #expect(throws: StoreError(.invalidInput, "")) { try TokenSerial.check("two words") }
        let serial = try #require(TokenSerial.random())
        #expect(serial.count == 10 && serial.first != "0" && serial.allSatisfy(\.isNumber))
        let seed = try #require(SecretBytes.random(count: 20))
        let token = NewToken(kind: .totp, parameters: OATHParameters(kind: .totp), seed: seed, expires: 100)
        try NewToken.check([token], user: "alice", now: 99)
        #expect(throws: StoreError(.invalidInput, "")) { try NewToken.check([token], user: "alice", now: 100) }
        #expect(throws: StoreError(.invalidInput, "")) { try NewToken.check([token], user: "-alice", now: 0) }
        var short = token
        short.seed = SecretBytes(count: 9)
        #expect(short.problem != nil)
    }

    @Test func generatedRecoveryCodesCarryTheirIdAndHash() throws {
        let codes = try RecoveryCodes.generate(count: 3)
        #expect(Set(codes.map(\.id)).count == 3)
        for code in codes {
            let bytes = Array(code.code.utf8)
            #expect(bytes.withUnsafeBufferPointer { RecoveryCodes.looksLikeCode($0) })
            #expect(code.id == String(code.code.prefix(4)))
            #expect(bytes.withUnsafeBufferPointer { SlowHash.verify($0, against: code.hash) })
        }
        #expect(throws: StoreError(.invalidInput, "")) { try RecoveryCodes.generate(count: 21) }
    }
}
