import Foundation
@testable import securotp
import SecurOTPService
import SecurOTPStore
import Testing

@Suite("securotp device add --web")
struct WebDeviceCommandTests {
    @Test("--web prints the enrollment link (JSON: device, user, url, expires, activation_code) and a QR code; without public_url a clear error")
    func webDeviceAdd() async throws {
        for publicURL in ["https://otp.example.com", nil] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-cli-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var settings = Settings()
            settings.paths = StorePaths(stateDirectory: directory)
            var policy = PushPolicy()
            policy.publicURL = publicURL.flatMap { try? PublicURL.parse($0).get() }
            let service = try SQLiteTokenService(settings: settings, create: true, pushPolicy: policy)
            let printed = CommandTests.Printed()
            let context = CommandContext(service: service, settings: settings, output: CommandOutput { printed.append($0) })
            guard publicURL != nil else {
                do {
                    try await DeviceCommand.Add.parse(["alice", "--web"]).run(in: context)
                    Issue.record("--web without public_url succeeded")
                } catch {
                    #expect((error as? ServiceError)?.message.contains("set public_url") == true, "\(error)")
                }
                continue
            }
            try await DeviceCommand.Add.parse(["alice", "--web", "--format", "json"]).run(in: context)
            let added = try CommandTests.json(printed.take())
            let code = try #require(added["activation_code"] as? String)
            #expect(added["url"] as? String == "https://otp.example.com/app/#enroll=" + code && added["expires"] is String
                    && (added["device"] as? String)?.hasPrefix("dv") == true && added["user"] as? String == "alice", "\(added)")
            try await DeviceCommand.Add.parse(["bob", "--web"]).run(in: context)
            let text = printed.take()
            #expect(text.contains("Link: https://otp.example.com/app/#enroll="), "\(text)")
            #expect(text.contains("\u{2580}") || text.contains("\u{2584}"), "a QR code: \(text)")
        }
    }
}
