import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine

/// pam_u2f lines in and out, and the assertion checks that need no valid signature (the
/// accepted path and the counter are proved end to end by IntegrationTests.FidoLoginTests).
@Suite struct FidoCredentialTests {
    static let keyHandle: [UInt8] = Array(0..<34)
    static let publicKey: [UInt8] = Array(repeating: 7, count: 64)
    static let origin = "pam://test"
    static var field: String {
        Base64.encode(keyHandle, .standard) + "," + Base64.encode(publicKey, .standard) + ",es256,+presence+pin"
    }

    @Test("pamu2fcfg's line parses, and prints back the same")
    func roundTrip() throws {
        let parsed = FidoCredential.parse(line: "alice:" + Self.field + "\n", origin: Self.origin)
        #expect(parsed.problem.isEmpty)
        #expect(parsed.user == "alice")
        let credential = try #require(parsed.credentials.first)
        #expect(credential.keyHandle == Self.keyHandle && credential.publicKey == Self.publicKey && credential.type == .es256)
        #expect(credential.presence && credential.pin && !credential.verification)
        #expect(FidoCredential.u2fLine(user: "alice", [credential]) == "alice:" + Self.field)
        let two = FidoCredential.parse(line: "alice:" + Self.field + ":" + Self.field, origin: Self.origin)
        #expect(two.credentials.count == 2)
        let bare = FidoCredential.parse(line: ":" + Self.field, origin: Self.origin)
        #expect(bare.user.isEmpty && bare.credentials.count == 1, "pamu2fcfg -n")
        let prefixed = Base64.encode(Self.keyHandle, .standard) + "," + Base64.encode([4] + Self.publicKey, .standard) + ",es256,"
        #expect(FidoCredential.parse(field: Substring(prefixed), origin: Self.origin).credential?.publicKey == Self.publicKey,
                "an uncompressed point's 0x04 is dropped")
    }

    @Test("A resident credential (pamu2fcfg -r): key handle * in and out; the same one is told apart by its public key")
    func resident() throws {
        let field = "*," + Base64.encode(Self.publicKey, .standard) + ",es256,+presence"
        let credential = try #require(FidoCredential.parse(field: Substring(field), origin: Self.origin).credential)
        #expect(credential.resident && credential.keyHandle.isEmpty && credential.publicKey == Self.publicKey)
        #expect(credential.u2fField == field)
        let byHandle = try #require(FidoCredential.parse(field: Substring(Self.field), origin: Self.origin).credential)
        #expect(!byHandle.resident && !byHandle.isSameCredential(as: credential) && !credential.isSameCredential(as: byHandle))
        var other = credential
        other.publicKey[0] ^= 1
        #expect(credential.isSameCredential(as: credential) && !credential.isSameCredential(as: other))
    }

    @Test("Old U2F-format KH,PK (web-safe base64, hex point) parses as es256 +presence for the app ID")
    func oldFormat() throws {
        let webSafe = Base64.encode(Self.keyHandle, .url)
        let parsed = FidoCredential.parse(line: "alice:" + webSafe + ",04" + Hex.encode(Self.publicKey), origin: Self.origin, appID: "pam://old")
        #expect(parsed.problem.isEmpty, "\(parsed.problem)")
        let credential = try #require(parsed.credentials.first)
        #expect(credential.keyHandle == Self.keyHandle && credential.publicKey == Self.publicKey && credential.type == .es256)
        #expect(credential.presence && !credential.pin && credential.origin == "pam://old")
        let notAPoint = FidoCredential.parse(line: "alice:" + webSafe + ",05" + Hex.encode(Self.publicKey), origin: Self.origin)
        #expect(notAPoint.credentials.isEmpty && notAPoint.problem.contains("old U2F-format"))
    }

    @Test("A mapping file: blank lines name no user, a user's last line counts, bad credentials named by position")
    func mappingFile() throws {
        let text = Array(("# u2f_mappings\n\nalice:" + Self.field + "\nbob:*,x,es256,+presence:" + Self.field + "\nalice:" + Self.field + ":" + Self.field + "\nnocolon\n").utf8)
        let alice = try #require(U2FMappingFile.line(for: "alice", in: text, origin: Self.origin, appID: Self.origin))
        #expect(alice.number == 5 && alice.credentials.count == 2 && alice.problems.isEmpty)
        let bob = try #require(U2FMappingFile.line(for: "bob", in: text, origin: Self.origin, appID: Self.origin))
        #expect(bob.number == 4 && bob.credentials.count == 1 && bob.problems.count == 1 && bob.problems[0].hasPrefix("credential 1: the public key"))
        #expect(U2FMappingFile.line(for: "carol", in: text, origin: Self.origin, appID: Self.origin) == nil)
        // As pam_u2f reads it: "# u2f_mappings" and "nocolon" are lines naming users no account has.
        let all = U2FMappingFile.lines(text, origin: Self.origin, appID: Self.origin)
        #expect(all.map(\.number) == [1, 3, 4, 5, 6] && all[4].user == "nocolon" && all[4].entries.isEmpty)
    }

    @Test("Refused: old U2F format, bad base64, wrong key sizes, unknown type, a resident old-format line", arguments: [
        "alice:*,04" + Hex.encode(publicKey),
        "alice:" + Base64.encode(keyHandle, .standard) + ",04abcdef",
        "alice:@@@@," + Base64.encode(publicKey, .standard) + ",es256,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + "," + Base64.encode(Array(publicKey.prefix(63)), .standard) + ",es256,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + "," + Base64.encode(publicKey, .standard) + ",eddsa,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + "," + Base64.encode(publicKey, .standard) + ",es384,+presence",
        "alice",
    ])
    func refused(_ line: String) {
        let parsed = FidoCredential.parse(line: line, origin: Self.origin)
        #expect(parsed.credentials.isEmpty)
        #expect(!parsed.problem.isEmpty)
    }

    private func check(_ data: [UInt8], _ credential: FidoCredential) -> FidoAssertionCheck.Outcome {
        FidoAssertionCheck.verify(authenticatorData: data, signature: [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01],
                                  clientDataHash: Array(repeating: 1, count: 32), credential: credential,
                                  requirePresence: true, requireVerification: false)
    }

    @Test("Assertion checks: malformed data, another RP ID, a signature that does not verify, an unsupported key type")
    func refusals() throws {
        let credential = try #require(FidoCredential.parse(field: Substring(Self.field), origin: Self.origin).credential)
        let rpHash = PushStatement.sha256(Array(Self.origin.utf8))
        let good = rpHash + [0x01, 0, 0, 0, 9]
        #expect(check(Array(good.prefix(36)), credential) == .refused(.malformed))
        #expect(check([UInt8](repeating: 0, count: 32) + [0x01, 0, 0, 0, 9], credential) == .refused(.rpIDMismatch))
        #expect(check(good, credential) == .refused(.badSignature))
        var eddsa = credential
        eddsa.type = .eddsa
        #expect(check(good, eddsa) == .refused(.unsupportedKeyType))
    }

    /// An RSA-2048 key (n || e = 65537, 259 bytes, as pamu2fcfg -t rs256 prints it) and its
    /// PKCS#1 v1.5 SHA-256 signature over rpIdHash("pam://test") | UP | counter 9 | 32 × 0x01,
    /// made with `openssl dgst -sha256 -sign`: an independent signer.
    static let rs256Key = Hex.decode(
        "aa6048ba54e6fb7afbd1ae7dcba57867df393e104e482155f2bd7cb68ff546797c639e8f36fdbbf4cf2539d3448f7720" +
        "7d46f6f97f26ee60cf71889275d205978e76d07a706791aa9664609a34f7d2cc47a6d9172edf182f24f8292fd9f05e65" +
        "98fcd8d47b781b198b2b709f97e293ab1bc8be09e06d282c6322951cf897448c099c1af734778327012e09092a34836f" +
        "18f7c850918157e3c8f851b75c3fb5a7b5297f0f3bd1d747ef978144f5c2463889105f434eea4744419656c7493fc10f" +
        "48663e764ce0db4240b25285635e7263178594664d63288178717492fc460d32dd1cfbd1fd3a5f3677d1eca554e3885b" +
        "b44e64e4316d30d711465cdc91d6bb4f010001") ?? []
    static let rs256Signature = Hex.decode(
        "0b46c159e377bee738a4d85f9e3974e0b5d64144eef71ca95833baa230fbb3bb1c257f4e786e64547516c7dd0bad0606" +
        "63082f53c1cb76d3225caa8e421dc625f87317496c318bd931ae5df9edc5a0d1fe70c13a6aefd16a9ac79e43761cf75c" +
        "6442ce2560b6c17e7c3a4abfff8c93861f8a6a8b93e0a40ced966ff8ba30527a58544a11842709a51788b81835672a8e" +
        "f8d77e7066efa6099962e65c1f1615d6808233092a07f6c6bb5a7c8ddb1793356ac9d74c8ef1dae443712fd9fa62e0ad" +
        "ce8fb785561f5f24de25c3527a22aa5da96c5215410c26b5631804d033fe90cdbddebdd47a1c3bf188b83342f0e65415" +
        "227f47da453c9ad7160a3f0d1efe9fb4") ?? []

    @Test("RS256: an openssl signature verifies with the n||e key; an altered modulus, exponent or signature does not")
    func rs256() throws {
        let field = Base64.encode(Self.keyHandle, .standard) + "," + Base64.encode(Self.rs256Key, .standard) + ",rs256,+presence"
        let credential = try #require(FidoCredential.parse(field: Substring(field), origin: Self.origin).credential)
        #expect(credential.type == .rs256 && credential.publicKey.count == 259)
        #expect(credential.u2fField == field)
        let data = PushStatement.sha256(Array(Self.origin.utf8)) + [0x01, 0, 0, 0, 9]
        func verify(_ key: [UInt8], _ signature: [UInt8]) -> FidoAssertionCheck.Outcome {
            var changed = credential
            changed.publicKey = key
            return FidoAssertionCheck.verify(authenticatorData: data, signature: signature, clientDataHash: Array(repeating: 1, count: 32),
                                             credential: changed, requirePresence: true, requireVerification: false)
        }
        #expect(verify(Self.rs256Key, Self.rs256Signature) == .verified(counter: 9))
        var modulus = Self.rs256Key
        modulus[128] ^= 0x01
        #expect(verify(modulus, Self.rs256Signature) == .refused(.badSignature))
        var exponent = Self.rs256Key
        exponent[258] = 0x03
        #expect(verify(exponent, Self.rs256Signature) == .refused(.badSignature))
        var signature = Self.rs256Signature
        signature[0] ^= 0x80
        #expect(verify(Self.rs256Key, signature) == .refused(.badSignature))
        #expect(verify(Self.rs256Key, Array(Self.rs256Signature.dropLast())) == .refused(.badSignature))
        var short = Self.rs256Key
        short[0] = 0
        #expect(verify(short, Self.rs256Signature) == .refused(.badSignature), "a modulus under 2048 bits")
        #expect(verify(Array(Self.rs256Key.prefix(258)), Self.rs256Signature) == .refused(.unsupportedKeyType))
        let shortField = Base64.encode(Self.keyHandle, .standard) + "," + Base64.encode(Array(Self.rs256Key.prefix(258)), .standard) + ",rs256,"
        #expect(FidoCredential.parse(field: Substring(shortField), origin: Self.origin).problem.contains("259 bytes"))
    }
}
