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

    @Test("A mapping file: comments and blank lines skipped, a user's last line counts, bad credentials named by position")
    func mappingFile() throws {
        let text = "# u2f_mappings\n\nalice:" + Self.field + "\nbob:*,x,es256,+presence:" + Self.field + "\nalice:" + Self.field + ":" + Self.field + "\nnocolon\n"
        let alice = try #require(U2FMappingFile.line(for: "alice", in: text, origin: Self.origin, appID: Self.origin))
        #expect(alice.number == 5 && alice.credentials.count == 2 && alice.problems.isEmpty)
        let bob = try #require(U2FMappingFile.line(for: "bob", in: text, origin: Self.origin, appID: Self.origin))
        #expect(bob.number == 4 && bob.credentials.count == 1 && bob.problems.count == 1 && bob.problems[0].hasPrefix("credential 1: resident"))
        #expect(U2FMappingFile.line(for: "carol", in: text, origin: Self.origin, appID: Self.origin) == nil)
        let all = U2FMappingFile.lines(text, origin: Self.origin, appID: Self.origin)
        #expect(all.map(\.number) == [3, 4, 5, 6] && all[3].user.isEmpty && !all[3].problems.isEmpty)
    }

    @Test("Refused: resident, old U2F format, bad base64, wrong key sizes, unknown type or attribute", arguments: [
        "alice:*," + Base64.encode(publicKey, .standard) + ",es256,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + ",04abcdef",
        "alice:@@@@," + Base64.encode(publicKey, .standard) + ",es256,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + "," + Base64.encode(Array(publicKey.prefix(63)), .standard) + ",es256,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + "," + Base64.encode(publicKey, .standard) + ",eddsa,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + "," + Base64.encode(publicKey, .standard) + ",es384,+presence",
        "alice:" + Base64.encode(keyHandle, .standard) + "," + Base64.encode(publicKey, .standard) + ",es256,+touch",
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
}
