import Foundation
import SecurOTPCore
import Testing

/// Push approvals made by an independent implementation (Tests/Vectors/push.json, written by
/// Tests/Vectors/push_vectors.py with PyPI `cryptography`): the statement and client data the
/// contract defines, byte for byte, and one validly signed case per refusal, so each case
/// can only be refused by the check it names. Committed vectors rather than Python at test
/// time: the core's tests run on machines without PyPI packages (CI's build image), and the
/// cases are data the verifier must keep accepting/refusing whatever Python is installed.
@Suite struct PushApprovalTests {
    static var vectors: [String: Any] { (try? VectorFile.load("push.json")) ?? [:] }
    static var cases: [[String: Any]] { vectors.list("cases") }

    static func statement(_ context: [String: Any]) -> PushStatement {
        func text(_ key: String) -> String { context.string(key) ?? "<missing \(key)>" }
        return PushStatement(id: text("id"), user: text("user"), host: text("host"), service: text("service"),
                             remoteAddress: text("remote_address"), tty: text("tty"), command: text("command"),
                             nonce: text("nonce"), number: text("number"), expires: text("expires"),
                             device: text("device"))
    }

    static func bytes(_ value: Any?) throws -> [UInt8] {
        let text = try #require(value as? String)
        return try #require(Base64.decode(text, .url))
    }

    @Test func statementAndClientDataMatchTheOracle() throws {
        let context = try #require(Self.vectors.table("context"))
        let statement = Self.statement(context)
        #expect(Hex.encode(statement.bytes) == Self.vectors.string("statement_hex"))
        #expect(Hex.encode(statement.challenge) == Self.vectors.string("challenge_hex"))
        let clientData = ClientData.json(type: ClientData.pushType, challenge: statement.challenge, origin: ClientData.pushOrigin)
        #expect(String(decoding: clientData, as: UTF8.self) == Self.vectors.string("authenticator_client_data_json"))
        let authenticatorData = AuthenticatorData.head(rpID: ClientData.pushRPID, userVerified: true, counter: 7)
        #expect(Hex.encode(authenticatorData) == Self.vectors.string("authenticator_data_hex"))
    }

    @Test func everyRefusalHasACase() {
        let expected: Set<String> = ["accepted", "malformed", "bad_public_key", "bad_client_data", "wrong_type",
                                     "wrong_origin", "wrong_challenge", "wrong_rp_id", "not_present", "not_verified",
                                     "bad_signature"]
        #expect(Set(Self.cases.compactMap { $0.string("expect") }) == expected)
    }

    @Test(arguments: PushApprovalTests.cases.indices)
    func oracleCase(index: Int) throws {
        let item = Self.cases[index]
        let name = item.string("name") ?? "?"
        let context = try #require(Self.vectors.table("context"))
        let result = ApprovalAssertion.verify(
            authenticatorData: try Self.bytes(item["authenticator_data"]),
            clientDataJSON: try Self.bytes(item["client_data_json"]),
            signature: try Self.bytes(item["signature"]),
            publicKey: try Self.bytes(item["public_key"]),
            expectedChallenge: Self.statement(context).challenge,
            expectedType: ClientData.pushType, expectedOrigin: ClientData.pushOrigin,
            expectedRPID: ClientData.pushRPID,
            requireUserVerification: (item["require_uv"] as? Bool) ?? true)
        let expect = try #require(item.string("expect"))
        if expect == "accepted" {
            let number = try #require(item["counter"] as? NSNumber)
            let counter = number.uint32Value
            #expect(result == .accepted(counter: counter, userVerified: (item["user_verified"] as? Bool) ?? false), "\(name)")
        } else {
            guard case .refused(let reason) = result else {
                Issue.record("\(name): accepted, expected \(expect)")
                return
            }
            #expect(reason.code == expect, "\(name)")
        }
    }

    /// The accepted case is refused when the host expects anything else: another challenge,
    /// a passkey's type and origin, another RP id.
    @Test func acceptedCaseDependsOnEveryExpectation() throws {
        let item = try #require(Self.cases.first { $0.string("expect") == "accepted" })
        let context = try #require(Self.vectors.table("context"))
        let good = Self.statement(context)
        func check(challenge: [UInt8], type: String = ClientData.pushType, origin: String = ClientData.pushOrigin,
                   rpID: String = ClientData.pushRPID) throws -> ApprovalResult {
            ApprovalAssertion.verify(authenticatorData: try Self.bytes(item["authenticator_data"]),
                                     clientDataJSON: try Self.bytes(item["client_data_json"]),
                                     signature: try Self.bytes(item["signature"]),
                                     publicKey: try Self.bytes(item["public_key"]), expectedChallenge: challenge,
                                     expectedType: type, expectedOrigin: origin, expectedRPID: rpID,
                                     requireUserVerification: true)
        }
        #expect(try check(challenge: good.challenge) == .accepted(counter: 7, userVerified: true))
        var otherNonce = good
        otherNonce.nonce = "AAAA"
        #expect(try check(challenge: otherNonce.challenge) == .refused(.wrongChallenge))
        var otherHost = good
        otherHost.host = "web-2"
        #expect(try check(challenge: otherHost.challenge) == .refused(.wrongChallenge))
        #expect(try check(challenge: good.challenge, type: ClientData.webAuthnGetType) == .refused(.wrongType))
        #expect(try check(challenge: good.challenge, origin: "https://login.example") == .refused(.wrongOrigin))
        #expect(try check(challenge: good.challenge, rpID: "login.example") == .refused(.wrongRPID))
        #expect(try check(challenge: Array(good.challenge.prefix(31))) == .refused(.malformed))
        // Every single-bit flip of the signature is refused.
        let signature = try Self.bytes(item["signature"])
        for bit in 0..<(signature.count * 8) {
            var flipped = signature
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            let result = ApprovalAssertion.verify(
                authenticatorData: try Self.bytes(item["authenticator_data"]), clientDataJSON: try Self.bytes(item["client_data_json"]),
                signature: flipped, publicKey: try Self.bytes(item["public_key"]), expectedChallenge: good.challenge,
                expectedType: ClientData.pushType, expectedOrigin: ClientData.pushOrigin, expectedRPID: ClientData.pushRPID,
                requireUserVerification: true)
            #expect(result == .refused(.badSignature), "bit \(bit)")
        }
    }

    @Test func deviceCertificates() throws {
        let certificates = try #require(Self.vectors.table("certificates"))
        let pemText = try #require(certificates.string("ca_public_key_pem"))
        let pem = Array(pemText.utf8)
        let caKey = try #require(DeviceCertificate.publicKey(pem: pem))
        #expect(caKey.count == 91)
        let publicKey = try Self.bytes(certificates["public_key"])
        let user = try #require(certificates.string("user"))
        let device = try #require(certificates.string("device"))
        let list = certificates.list("cases")
        #expect(list.count >= 5)
        for item in list {
            let certificate = try #require(item.string("certificate"))
            let valid = DeviceCertificate.check(certificate: certificate, user: user, device: device, publicKey: publicKey, caPublicKey: caKey,
                                                now: 1_800_000_000) == .valid(expires: nil)
            #expect(valid == (item["valid"] as? Bool), "\(item.string("name") ?? "?")")
        }
        // The DER key itself is accepted as the CA key; a truncated PEM is not a key.
        #expect(DeviceCertificate.publicKey(pem: caKey) == caKey)
        #expect(DeviceCertificate.publicKey(pem: Array(pem.prefix(60))) == nil)
    }

    @Test func base64IsStrict() {
        for length in 0..<20 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            #expect(Base64.decode(Base64.encode(bytes, .url), .url) == bytes)
            #expect(Base64.decode(Base64.encode(bytes, .standard), .standard) == bytes)
            #expect(Base64.encode(bytes, .standard) == Data(bytes).base64EncodedString())
        }
        #expect(Base64.decode("QQ", .url) == [0x41])
        #expect(Base64.decode("QR", .url) == nil) // non-zero trailing bits
        #expect(Base64.decode("QQ==", .url) == nil)
        #expect(Base64.decode("QQ", .standard) == nil)
        #expect(Base64.decode("Q", .url) == nil)
        #expect(Base64.decode("a+b/", .url) == nil)
        #expect(Base64.decode("a-b_", .standard) == nil)
        #expect(Base64.decode("QQ= ", .standard) == nil)
        #expect(Base64.decode("=QQ=", .standard) == nil)
    }
}
