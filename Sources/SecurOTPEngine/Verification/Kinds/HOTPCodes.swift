import SecurOTPCore

/// RFC 4226 event tokens: the stored counter is the next code's; a code at or after it is fresh.
struct HOTPCodes: CodeRules {
    let record: TokenRecord

    init(_ record: TokenRecord) { self.record = record }

    func centre(now: Int64) -> Int64 { Int64(bitPattern: record.parameters.counter) }

    func positions(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64] {
        Positions.counter(around: centre, policy: policy, resync: resync)
    }

    func code(seed: SecretBytes, position: Int64, challenge: String?) -> [UInt8] {
        OTP.hotp(secret: seed, counter: UInt64(position), digits: record.parameters.digits, algorithm: record.parameters.algorithm)
    }

    func isFresh(_ position: Int64) -> Bool { position >= Int64(bitPattern: record.parameters.counter) }

    func acceptance(position: Int64, now: Int64, drift: Int64) throws(StoreError) -> StateWrite {
        try Positions.counterAcceptance(record, position: position, now: now)
    }
}
