import Foundation
@testable import securotp
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import Testing

/// securotp's commands run in-process: a store in a temporary directory, a fixed clock,
/// scripted secret lines and the output collected, through the same `run(in:)` the
/// command line uses.
@Suite("securotp commands in-process")
struct CommandTests {
    final class Printed: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func append(_ more: String) { lock.withLock { text += more } }
        func take() -> String { lock.withLock { defer { text = "" }; return text } }
    }

    struct World {
        let context: CommandContext
        let printed: Printed
        let service: SQLiteTokenService
        let directory: String
    }

    static func world(secretLines: [String] = []) throws -> World {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-cli-\(UUID().uuidString)").path
        var settings = Settings()
        settings.paths = StorePaths(stateDirectory: directory)
        let service = try SQLiteTokenService(settings: settings, create: true)
        let printed = Printed()
        var context = CommandContext(service: service, settings: settings, output: CommandOutput { printed.append($0) })
        context.clock = { 1_800_000_000 }
        var lines = secretLines
        context.secretLine = { _, what in
            guard !lines.isEmpty else { throw CLIError(.inputUnreadable, "no \(what) scripted") }
            return Array(lines.removeFirst().utf8)
        }
        return World(context: context, printed: printed, service: service, directory: directory)
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
    }

    @Test("enroll, list, PIN set, unlock and recovery codes print what the command line prints, on the injected store")
    func tokenCommands() async throws {
        let world = try Self.world(secretLines: ["4711", "4711"])
        defer { try? FileManager.default.removeItem(atPath: world.directory) }
        let context = world.context

        try await Enroll.parse(["alice", "--hotp", "--format", "json"]).run(in: context)
        let enrolled = try Self.json(world.printed.take())
        let serial = try #require(enrolled["serial"] as? String)
        #expect(enrolled["kind"] as? String == "hotp" && enrolled["counter"] as? Int == 0, "\(enrolled)")

        try await List.parse(["alice"]).run(in: context)
        let listing = world.printed.take()
        #expect(listing.contains(serial) && listing.contains("hotp") && listing.contains("active"), "\(listing)")

        try await PIN.Set.parse(["alice", serial]).run(in: context)
        #expect(world.printed.take() == "PIN set for token \(serial) of alice.\n")
        let tokens = try await world.service.tokens(user: "alice", caller: .local("test")).tokens
        #expect(tokens.first?.pinSet == true, "the PIN reached the store")

        try await Unlock.parse(["alice"]).run(in: context)
        #expect(world.printed.take() == "alice was not locked; failure count reset.\n")

        try await RecoveryCodesCommand.parse(["alice", "--format", "json"]).run(in: context)
        let codes = try #require(try Self.json(world.printed.take())["codes"] as? [String])
        #expect(codes.count >= 5 && Set(codes).count == codes.count, "\(codes)")
        await world.service.close()
    }

    @Test("Two different PINs: nothing changes, the command fails with the CLI's message")
    func pinsDiffer() async throws {
        let world = try Self.world(secretLines: ["4711", "4712"])
        defer { try? FileManager.default.removeItem(atPath: world.directory) }
        try await Enroll.parse(["bob", "--format", "json"]).run(in: world.context)
        let serial = try #require(try Self.json(world.printed.take())["serial"] as? String)
        await #expect(throws: CLIError.self) { try await PIN.Set.parse(["bob", serial]).run(in: world.context) }
        #expect(world.printed.take().isEmpty)
        let tokens = try await world.service.tokens(user: "bob", caller: .local("test")).tokens
        #expect(tokens.first?.pinSet == false)
        await world.service.close()
    }
}
