import SecurOTPCore

/// RFC 6238 time tokens: the step of `now` (plus the drift the token showed), each step
/// accepted once: fresh means after the last accepted step.
struct TOTPCodes: CodeRules {
    let record: TokenRecord

    init(_ record: TokenRecord) { self.record = record }

    func centre(now: Int64) -> Int64 {
        Int64(clamping: OTP.timeStep(unixTime: now, period: record.parameters.period) ?? 0) + record.drift
    }

    func positions(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64] {
        Positions.timeSteps(around: centre, policy: policy, resync: resync)
    }

    func code(seed: SecretBytes, position: Int64, challenge: String?) -> [UInt8] {
        OTP.hotp(secret: seed, counter: UInt64(position), digits: record.parameters.digits, algorithm: record.parameters.algorithm)
    }

    func isFresh(_ position: Int64) -> Bool { position > record.lastStep }

    func acceptance(position: Int64, now: Int64, drift: Int64) throws(StoreError) -> StateWrite {
        Positions.stepAcceptance(record, position: position, now: now, drift: drift)
    }
}
