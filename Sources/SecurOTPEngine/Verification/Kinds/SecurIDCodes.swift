import SecurOTPCore

/// RSA SecurID-style time tokens: steps, drift and freshness as TOTP's, codes from the
/// SecurID algorithm over the token's serial and interval.
struct SecurIDCodes: CodeRules {
    let steps: TOTPCodes

    init(_ record: TokenRecord) { steps = TOTPCodes(record) }

    func centre(now: Int64) -> Int64 { steps.centre(now: now) }

    func positions(around centre: Int64, policy: VerifyPolicy, resync: Bool) -> [Int64] {
        steps.positions(around: centre, policy: policy, resync: resync)
    }

    func code(seed: SecretBytes, position: Int64, challenge: String?) -> [UInt8] {
        let p = steps.record.parameters
        return SecurIDCode.tokencode(seed: seed, serial: steps.record.serial, digits: p.digits, interval: p.period,
                                     unixTime: position &* Int64(p.period))
    }

    func isFresh(_ position: Int64) -> Bool { steps.isFresh(position) }

    func acceptance(position: Int64, now: Int64, drift: Int64) throws(StoreError) -> StateWrite {
        try steps.acceptance(position: position, now: now, drift: drift)
    }
}
