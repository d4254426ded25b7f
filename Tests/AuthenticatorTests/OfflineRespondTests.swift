import Foundation
import SecurOTPAuthenticator
import SecurOTPCore
import Testing

/// `securotp-authenticator respond` (docs/push.md, "Offline approval"): the response to a
/// login's offline challenge, made without the network under the sealed offline secret, after
/// the PIN, whose wrong tries count towards the block.
@Suite struct OfflineRespondTests {
    static let secret: [UInt8] = (0..<32).map { UInt8($0 * 7 + 3) }

    static func device(_ scratch: Scratch, offline: Bool = true) throws -> PushDevice {
        let store = try scratch.open()
        let key = try DeviceSigningKey.generate()
        try store.registerDevice(device: "dv0123456789abcdef", user: "alice", server: "http://127.0.0.1:1", caFile: nil,
                                 publicKey: key.publicKey, privateKey: key.privateKey,
                                 credential: SecretBytes(copying: Array(PushDeviceTests.credential.utf8)),
                                 pinPolicy: ActivatedPINPolicy(required: true), pin: SecretBytes(copying: Array("2468".utf8)),
                                 now: Scratch.now, offlineSecret: offline ? SecretBytes(copying: secret) : nil)
        return try PushDevice(store: store)
    }

    static func pin(_ text: String) -> SecretBytes { SecretBytes(copying: Array(text.utf8)) }

    @Test func respondsWithTheOCRAResponseAfterThePIN() throws {
        let scratch = try Scratch()
        let device = try Self.device(scratch)
        let expected = String(decoding: try OfflineApproval.response(secret: SecretBytes(copying: Self.secret), challenge: "12345678"),
                              as: UTF8.self)
        #expect(try device.respond(challenge: "1234 5678", pin: Self.pin("2468")) == expected)
        #expect(try device.respond(challenge: "12345678", pin: Self.pin("2468")) == expected)
        #expect(try device.respond(challenge: "00000001", pin: Self.pin("2468")) != expected)
        // Reopened, the sealed secret answers the same.
        #expect(try PushDevice(store: try scratch.open()).respond(challenge: "12345678", pin: Self.pin("2468")) == expected)
        for bad in ["1234567", "123456789", "abcdefgh", ""] {
            #expect(throws: AuthenticatorError.self) { try device.respond(challenge: bad, pin: Self.pin("2468")) }
        }
        #expect(throws: AuthenticatorError.self) { try device.respond(challenge: "12345678", pin: nil) }
    }

    @Test func wrongPINsCountAndBlock() throws {
        let scratch = try Scratch()
        let device = try Self.device(scratch)
        for _ in 0..<3 {
            #expect(throws: AuthenticatorError.self) { try device.respond(challenge: "12345678", pin: Self.pin("1111")) }
        }
        #expect(try device.store.deviceRegistration()?.blocked == true)
        // Blocked: even the right PIN gets no response.
        #expect(throws: AuthenticatorError.self) { try device.respond(challenge: "12345678", pin: Self.pin("2468")) }
    }

    @Test func aDeviceWithoutOfflineModeSaysSo() throws {
        let scratch = try Scratch()
        let device = try Self.device(scratch, offline: false)
        #expect(try !device.store.hasOfflineSecret())
        do {
            _ = try device.respond(challenge: "12345678", pin: Self.pin("2468"))
            Issue.record("answered without a secret")
        } catch {
            #expect("\(error)".contains("no offline mode"), "\(error)")
        }
    }

    @Test func theSecretIsSealedInTheStoreFile() throws {
        let scratch = try Scratch()
        _ = try Self.device(scratch)
        let file = scratch.bytes(scratch.paths.database)
        let needle = Array(Self.secret.prefix(16))
        #expect(!file.isEmpty)
        #expect(!(0...(file.count - needle.count)).contains { file[$0..<($0 + needle.count)].elementsEqual(needle) })
    }
}
