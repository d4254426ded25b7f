import SecurOTPCore

/// Work done only so that every attempt costs the same: a name without tokens, an unknown
/// name and a locked one are answered after what a wrong code of a one-token user costs, and
/// every recovery-code guess after one slow hash (docs/security.md, "Same work for everyone").
enum Decoy {
    /// What checking `input` would have cost a one-token user: a slow hash for an answer of the
    /// recovery-code shape, else `tokenWork`. For attempts that are answered without a check (locked).
    static func work(input: UnsafeBufferPointer<UInt8>, codeAtEnd: Bool, policy: VerifyPolicy, dataKey: SecretBytes) {
        if VerificationEngine.readsRecoveryCodes(input: input, codeAtEnd: codeAtEnd) {
            _ = SlowHash.verify(input, against: slowHashRecord)
        } else {
            tokenWork(input: input, policy: policy, dataKey: dataKey)
        }
    }

    /// What a wrong code costs a user with one default token (TOTP, SHA1, 6 digits): one seed
    /// opened, the window's codes and the resync band's, compared in constant time.
    static func tokenWork(input: UnsafeBufferPointer<UInt8>, policy: VerifyPolicy, dataKey: SecretBytes) {
        // A blob of a 20-byte seed's sealed size that never opens: AES-GCM does all its work
        // before the tag check fails.
        let seed = SeedSealing.open(sealedSeed, key: dataKey, user: "", serial: "") ?? SecretBytes(count: 20)
        let window = max(0, policy.window)
        let band = policy.resyncWindow > window ? 2 * (policy.resyncWindow - window) : 0
        var sink: UInt8 = 0
        for step in 0..<(2 * window + 1 + band) {
            let code = OTP.hotp(secret: seed, counter: UInt64(step), digits: 6, algorithm: .sha1)
            sink ^= code.withUnsafeBufferPointer { ConstantTime.equal($0, input) } ? 1 : 0
        }
        _ = sink
    }

    static let sealedSeed = [UInt8](repeating: 0x5a, count: 12 + 20 + 16)

    /// A well-formed slow-hash record with the default iterations that no secret matches (its
    /// hash is all zeros): verifying against it costs what verifying a real recovery code does.
    static let slowHashRecord: [UInt8] = Array("pbkdf2-sha256$\(SlowHash.defaultIterations)$".utf8)
        + [UInt8](repeating: UInt8(ascii: "0"), count: 2 * SlowHash.saltLength) + [UInt8(ascii: "$")]
        + [UInt8](repeating: UInt8(ascii: "0"), count: 2 * SlowHash.hashLength)
}
