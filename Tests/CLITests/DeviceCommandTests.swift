import Foundation
@testable import securotp
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import Testing

@Suite("securotp device commands in-process")
struct DeviceCommandTests {
    @Test("device add prints a single-use code and a QR link; list, certify, unlock-code, unblock-push and remove act on the store")
    func deviceCommands() async throws {
        let world = try CommandTests.world()
        defer { try? FileManager.default.removeItem(atPath: world.directory) }
        let context = world.context

        try await DeviceCommand.Add.parse(["alice", "--name", "laptop", "--format", "json"]).run(in: context)
        let added = try CommandTests.json(world.printed.take())
        let device = try #require(added["device"] as? String)
        let code = try #require(added["activation_code"] as? String)
        #expect(device.range(of: "^dv[0-9a-f]{16}$", options: .regularExpression) != nil && added["expires"] is String, "\(added)")
        #expect(code.range(of: "^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$", options: .regularExpression) != nil)

        try await DeviceCommand.Add.parse(["bob", "--validator", "https://otp.example.com:8443"]).run(in: context)
        let text = world.printed.take()
        #expect(text.contains("securotp-activate:https://otp.example.com:8443?code="), "\(text)")
        #expect(text.contains("\u{2580}") || text.contains("\u{2584}"), "a QR code: \(text)")

        let key = try #require(PushRules.generateKeyPair())
        let activated = try await world.service.activateDevice(DeviceActivationRequest(activationCode: code, publicKey: PushRules.base64URLEncode(key.publicKey)),
                                                               address: "test")
        #expect(activated.device == device)

        try await DeviceCommand.ListDevices.parse(["alice", "--format", "json"]).run(in: context)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(world.printed.take().utf8)) as? [[String: Any]])
        #expect(listed.count == 1 && listed[0]["state"] as? String == "active" && listed[0]["certified"] as? Bool == false, "\(listed)")

        let ca = try #require(PushRules.generateKeyPair())
        let caFile = world.directory + "/ca.pem"
        FileManager.default.createFile(atPath: caFile, contents: Data(ca.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
        try await DeviceCommand.Certify.parse(["alice", device, "--ca-key", caFile]).run(in: context)
        #expect(world.printed.take().hasPrefix("Certified device \(device)"))
        let certified = try await world.service.devices(user: "alice", caller: .local("test")).devices
        #expect(certified.first?.certified == true)
        // The certificate expires --days after now (default 365), inside what the CA signed.
        for (arguments, days) in [([String](), Int64(365)), (["--days", "30"], Int64(30))] {
            try await DeviceCommand.Certify.parse(["alice", device, "--ca-key", caFile] + arguments).run(in: context)
            _ = world.printed.take()
            let database = try SQLiteDatabase(path: world.directory + "/securotp.db", create: false)
            let read = try database.prepare("SELECT certificate FROM devices WHERE id = ?")
            try read.bind(.text(device))
            let certificate = try read.step() ? read.text(0) : ""
            let expires = 1_800_000_000 + days * 86_400
            #expect(certificate.hasPrefix("v2:\(expires):"), "\(certificate)")
            #expect(DeviceCertificate.check(certificate: certificate, user: "alice", device: device, publicKey: key.publicKey, caPublicKey: ca.publicKey,
                                            now: expires - 1) == .valid(expires: expires))
        }
        #expect(throws: (any Error).self) { try DeviceCommand.Certify.parse(["alice", device, "--ca-key", caFile, "--days", "0"]) }

        try await DeviceCommand.UnlockCode.parse(["alice", device, "--format", "json"]).run(in: context)
        let unlock = try CommandTests.json(world.printed.take())
        #expect((unlock["unlock_code"] as? String)?.count == 19, "\(unlock)")

        try await DeviceCommand.UnblockPush.parse(["alice"]).run(in: context)
        #expect(world.printed.take().contains("was not blocked"))

        try await DeviceCommand.Remove.parse(["alice", device]).run(in: context)
        #expect(world.printed.take() == "Removed device \(device) of alice.\n")
        await #expect(throws: ServiceError.self) { try await DeviceCommand.Remove.parse(["alice", device]).run(in: context) }
    }
}
