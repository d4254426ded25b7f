import Foundation
import SecurOTPCore
import Testing

/// The one table of device kinds and the one signature-counter rule (docs/design.md).
@Suite("Device types and the signature counter: one table, one rule")
struct DeviceTypeTests {
    @Test("Each kind's aaid reads back as that kind; anything else is no kind")
    func table() {
        for type in DeviceType.allCases { #expect(DeviceType(aaid: type.aaid) == type) }
        #expect(Set(DeviceType.allCases.map(\.aaid)).count == DeviceType.allCases.count)
        for other in ["", "FFFF#0003", "ffff#0001", "FFFF#00010", "FFFF 0001"] { #expect(DeviceType(aaid: other) == nil, "\(other)") }
        #expect(DeviceType.authenticator.hasOfflineSecret && !DeviceType.phonePasskey.hasOfflineSecret)
    }

    @Test("What an approval must say: the authenticator's fixed client data; a passkey's origin and its host as RP id, always verified")
    func expectations() throws {
        let app = try #require(DeviceType.authenticator.expected(signedAt: "https://evil.example", requireUserVerification: false))
        #expect(app == .init(type: ClientData.pushType, origin: ClientData.pushOrigin, rpID: ClientData.pushRPID, userVerification: false))
        #expect(DeviceType.authenticator.expected(signedAt: nil, requireUserVerification: true)?.userVerification == true)
        let passkey = try #require(DeviceType.phonePasskey.expected(signedAt: "https://otp.example.com:8443", requireUserVerification: false))
        #expect(passkey == .init(type: ClientData.webAuthnGetType, origin: "https://otp.example.com:8443", rpID: "otp.example.com", userVerification: true))
        for bad: String? in [nil, "", "http://otp.example.com", "https://192.0.2.1", "https://otp.example.com/"] {
            #expect(DeviceType.phonePasskey.expected(signedAt: bad, requireUserVerification: true) == nil, "\(bad ?? "nil")")
        }
    }

    @Test("The counter rule (WebAuthn §6.1.1): 0 after 0 passes; else it must rise; a stored value beyond UInt32 is corrupt")
    func counter() {
        #expect(SignatureCounter.accepts(received: 0, stored: 0))
        #expect(SignatureCounter.accepts(received: 1, stored: 0) && SignatureCounter.accepts(received: 6, stored: 5))
        #expect(!SignatureCounter.accepts(received: 5, stored: 5) && !SignatureCounter.accepts(received: 4, stored: 5))
        #expect(!SignatureCounter.accepts(received: 0, stored: 5))
        #expect(SignatureCounter.stored(7) == 7 && SignatureCounter.stored(-1) == .max && SignatureCounter.stored(1 << 32) == .max)
        #expect(!SignatureCounter.accepts(received: .max, stored: SignatureCounter.stored(-1)))
    }

    @Test("Authenticator data's head, read once for approvals, registrations and FIDO keys: what a device writes reads back")
    func authenticatorDataHead() throws {
        let bytes = AuthenticatorData.head(rpID: "otp.example.com", userVerified: true, counter: 0x0102_0304)
        let head = try #require(AuthenticatorData(bytes))
        #expect(bytes.count == AuthenticatorData.headLength && head.counter == 0x0102_0304 && head.userPresent && head.userVerified)
        #expect(head.isFor(rpID: "otp.example.com") && !head.isFor(rpID: "example.com") && !head.hasAttestedCredential)
        #expect(AuthenticatorData(Array(bytes.dropLast())) == nil)
        let unverified = try #require(AuthenticatorData(AuthenticatorData.head(rpID: "x", userVerified: false, counter: 0) + [0xa0]))
        #expect(unverified.userPresent && !unverified.userVerified && unverified.counter == 0)
    }

    @Test("The aaids are written once: no source outside DeviceType.swift spells them")
    func aaidsWrittenOnce() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var spelled: [String] = []
        for case let file as URL in files where file.pathExtension == "swift" && file.lastPathComponent != "DeviceType.swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//")
                && (line.contains("\"FFFF#0001\"") || line.contains("\"FFFF#0002\"")) {
                spelled.append("\(file.lastPathComponent): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(spelled.isEmpty, "\(spelled)")
    }
}
