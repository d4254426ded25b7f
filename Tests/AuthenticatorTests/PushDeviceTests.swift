import Foundation
import SecurOTPAuthenticator
import SecurOTPCore
import Testing

/// The device side of push approval without a validator: the key pair, what the store signs
/// (checked by the host's verifier, SecurOTPCore's ApprovalAssertion), PIN rules and blocking,
/// and that the private key and credential are sealed in the store file.
@Suite struct PushDeviceTests {
    static let credential = "sotp_d_0123456789abcdef_secretsecretsecretsecret"

    static func request(id: String = "pr" + String(repeating: "ab", count: 16)) -> PushStatement {
        PushStatement(id: id, user: "alice", host: "web-1", service: "sshd", remoteAddress: "192.0.2.7", tty: "",
                      command: "", nonce: Base64.encode(Array(repeating: 7, count: 32), .url), number: "492817",
                      expires: "1700000060", device: "dv0123456789abcdef")
    }

    /// A store with a registered device; returns the store, the public key and the PEM text.
    static func registered(_ scratch: Scratch, pinRequired: Bool = true, pin: String = "2468") throws
        -> (store: AuthenticatorStore, publicKey: [UInt8], privateKeyPEM: String) {
        let store = try scratch.open()
        let key = try DeviceSigningKey.generate()
        let pem = key.privateKey.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        try store.registerDevice(device: "dv0123456789abcdef", user: "alice", server: "http://127.0.0.1:1", caFile: nil,
                                 publicKey: key.publicKey, privateKey: key.privateKey,
                                 credential: SecretBytes(copying: Array(credential.utf8)),
                                 pinPolicy: ActivatedPINPolicy(required: pinRequired), pin: pinRequired ? SecretBytes(copying: Array(pin.utf8)) : nil,
                                 now: Scratch.now)
        return (store, key.publicKey, pem)
    }

    static func verify(_ approval: SignedApproval, publicKey: [UInt8], statement: PushStatement, requireUV: Bool = true) -> ApprovalResult {
        ApprovalAssertion.verify(authenticatorData: approval.authenticatorData, clientDataJSON: approval.clientDataJSON,
                                 signature: approval.signature, publicKey: publicKey, expectedChallenge: statement.challenge,
                                 expectedType: ClientData.pushType, expectedOrigin: ClientData.pushOrigin,
                                 expectedRPID: ClientData.pushRPID, requireUserVerification: requireUV)
    }

    @Test func generatedKeyIsAP256SPKIAndPEM() throws {
        let key = try DeviceSigningKey.generate()
        #expect(key.publicKey.count == 91)
        #expect(Hex.encode(key.publicKey.prefix(26)) == "3059301306072a8648ce3d020106082a8648ce3d030107034200")
        let pem = key.privateKey.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let other = try DeviceSigningKey.generate()
        #expect(other.publicKey != key.publicKey)
        // The signature verifies under its own key only.
        let message = Array("hello".utf8)
        let signature = try DeviceSigningKey.sign(message, privateKey: key.privateKey)
        #expect(ApprovalAssertion.es256Verify(publicKey: key.publicKey, message: message, signature: signature))
        #expect(!ApprovalAssertion.es256Verify(publicKey: other.publicKey, message: message, signature: signature))
        #expect(!ApprovalAssertion.es256Verify(publicKey: key.publicKey, message: Array("hellO".utf8), signature: signature))
    }

    @Test func signedApprovalIsAcceptedByTheHostVerifier() throws {
        let scratch = try Scratch()
        let (store, publicKey, _) = try Self.registered(scratch)
        let statement = Self.request()
        let first = try store.signApproval(statement, userVerified: true)
        #expect(String(decoding: first.clientDataJSON, as: UTF8.self)
            == "{\"type\":\"securotp.push.approve\",\"challenge\":\"\(Base64.encode(statement.challenge, .url))\",\"origin\":\"securotp:push\"}")
        #expect(Self.verify(first, publicKey: publicKey, statement: statement) == .accepted(counter: 1, userVerified: true))
        let second = try store.signApproval(statement, userVerified: false)
        #expect(Self.verify(second, publicKey: publicKey, statement: statement, requireUV: false) == .accepted(counter: 2, userVerified: false))
        #expect(Self.verify(second, publicKey: publicKey, statement: statement) == .refused(.notVerified))
        // The host's statement has the number it showed: a device answer with another number fails.
        var typedWrong = statement
        typedWrong.number = "492818"
        let wrong = try store.signApproval(typedWrong, userVerified: true)
        #expect(Self.verify(wrong, publicKey: publicKey, statement: statement) == .refused(.wrongChallenge))
        #expect(try store.deviceRegistration()?.counter == 3)
        // A store reopened keeps the counter: it never repeats.
        let reopened = try scratch.open()
        let fourth = try reopened.signApproval(statement, userVerified: true)
        #expect(Self.verify(fourth, publicKey: publicKey, statement: statement) == .accepted(counter: 4, userVerified: true))
    }

    @Test func pendingRequestBuildsTheStatementTheHostBuilds() throws {
        // A request as the validator lists it (no number) plus the typed number gives the same
        // statement as the host's own view.
        let statement = Self.request()
        let json = """
        {"requests":[{"id":"\(statement.id)","user":"alice","host":"web-1","service":"sshd","remote_address":"192.0.2.7","tty":"","command":"","nonce":"\(statement.nonce)","expires":1700000060}]}
        """
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let list = try #require(object["requests"] as? [[String: Any]])
        let pending = try #require(PendingPush.parse(list).first)
        #expect(pending.statement(number: "492817", device: "dv0123456789abcdef") == statement)
        // A request lacking a field is skipped, never signed with a guess.
        var partial = list[0]
        partial["nonce"] = nil
        #expect(PendingPush.parse([partial]).isEmpty)
    }

    @Test func pinPolicyLengths() throws {
        let policy = ActivatedPINPolicy(required: true)
        for good in ["1234", "12345678", "pässwörd"] {
            #expect(throws: Never.self) { try policy.check(newPIN: SecretBytes(copying: Array(good.utf8))) }
        }
        for bad in ["123", "123456789", "12\n34", ""] {
            #expect(throws: AuthenticatorError.self) { try policy.check(newPIN: SecretBytes(copying: Array(bad.utf8))) }
        }
    }

    @Test func threeWrongPINsBlockAndUnlockClears() throws {
        let scratch = try Scratch()
        let (store, _, _) = try Self.registered(scratch, pin: "2468")
        func check(_ pin: String) throws -> PINCheck { try store.checkPIN(SecretBytes(copying: Array(pin.utf8))) }
        #expect(try check("1111") == .wrong(remaining: 2))
        #expect(try check("2468") == .accepted) // a right PIN clears the count
        #expect(try check("1111") == .wrong(remaining: 2))
        #expect(try check("2222") == .wrong(remaining: 1))
        #expect(try check("3333") == .blocked)
        #expect(try store.deviceRegistration()?.blocked == true)
        #expect(try check("2468") == .blocked) // blocked: even the right PIN is not checked
        // The block survives reopening the store.
        #expect(try scratch.open().deviceRegistration()?.blocked == true)
        try store.unblockDevice(newPIN: SecretBytes(copying: Array("97531".utf8)))
        #expect(try store.deviceRegistration()?.blocked == false)
        #expect(try check("2468") == .wrong(remaining: 2)) // the old PIN is gone
        #expect(try check("97531") == .accepted)
    }

    @Test func privateKeyAndCredentialAreSealedInTheStoreFile() throws {
        let scratch = try Scratch()
        let (_, publicKey, pem) = try Self.registered(scratch, pin: "2468")
        let file = scratch.bytes(scratch.paths.database)
        #expect(!file.isEmpty)
        func contains(_ needle: [UInt8]) -> Bool {
            guard needle.count <= file.count else { return false }
            return (0...(file.count - needle.count)).contains { file[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
        // The public key is stored in clear (it is public): the search works.
        #expect(contains(publicKey))
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        #expect(!body.isEmpty)
        #expect(!contains(Array(body.utf8.prefix(40))))
        #expect(!contains(Array("PRIVATE KEY".utf8)))
        // The private scalar: the 32-byte OCTET STRING (04 20 …) inside ECPrivateKey. (The DER's
        // tail is the public point, which is in clear on purpose.)
        let der = try #require(Base64.decode(body, .standard))
        let scalarStart = try #require((0..<(der.count - 34)).first { der[$0] == 0x04 && der[$0 + 1] == 0x20 }) + 2
        let scalar = Array(der[scalarStart..<(scalarStart + 32)])
        #expect(!contains(scalar))
        #expect(!contains(Array(scalar.prefix(16))))
        #expect(!contains(Array(Self.credential.utf8)))
        #expect(!contains(Array("2468".utf8)))
        // Another machine's keys do not open the sealed key.
        let copy = try scratch.copyStore(to: "copy")
        #expect(throws: AuthenticatorError.self) {
            _ = try scratch.open(DeviceIdentity(uid: Scratch.me.uid, machineID: Scratch.otherMachine), paths: copy, create: false)
        }
    }

    @Test func oneDevicePerStoreAndForget() throws {
        let scratch = try Scratch()
        let (store, _, _) = try Self.registered(scratch)
        let key = try DeviceSigningKey.generate()
        #expect(throws: AuthenticatorError.self) {
            try store.registerDevice(device: "dvffffffffffffffff", user: "bob", server: "https://otp.example", caFile: nil,
                                     publicKey: key.publicKey, privateKey: key.privateKey, credential: SecretBytes(copying: [1]),
                                     pinPolicy: ActivatedPINPolicy(required: false), pin: nil, now: Scratch.now)
        }
        try store.forgetDevice()
        #expect(try store.deviceRegistration() == nil)
        #expect(throws: AuthenticatorError.self) { _ = try store.signApproval(Self.request(), userVerified: true) }
    }

    @Test func plainHTTPOnlyToLoopback() throws {
        for good in ["https://otp.example.com", "http://127.0.0.1:8080", "http://[::1]:80/", "http://localhost:9"] {
            #expect(throws: Never.self) { _ = try DeviceConnection(server: good, caFile: nil) }
        }
        for bad in ["http://otp.example.com", "http://127.0.0.1.evil.example", "ftp://x", "otp.example.com", "http://[::2]"] {
            #expect(throws: AuthenticatorError.self) { _ = try DeviceConnection(server: bad, caFile: nil) }
        }
    }
}
