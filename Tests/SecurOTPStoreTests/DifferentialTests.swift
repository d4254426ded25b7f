import TestSupport
import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// The SQLite store and MemoryBackend (the engine over dictionaries, with StateWrite's
/// conditional semantics) run the same random sequences side by side: every answer and, after
/// every step, every stored row must be the same.
@Suite struct DifferentialTests {
    static let steps = 120

    static func run(seed: UInt64) throws -> Scenario {
        let sqlite = try SQLiteBackend()
        let scenario = try Scenario(seed: seed, store: sqlite.store)
        let memory = try MemoryBackend(copying: sqlite.store)
        #expect(try memory.dump() == sqlite.dump())
        for _ in 0..<steps {
            guard try scenario.step([sqlite, memory]) else { break }
        }
        return scenario
    }

    @Test(arguments: 1...24)
    func sqliteAndMemoryAgree(seed: Int) throws {
        _ = try Self.run(seed: UInt64(seed))
    }

    /// The sequences reach every outcome, so agreement above is not agreement on rejections only.
    @Test func sequencesReachEveryOutcome() throws {
        var trace: [String] = []
        for seed in 101...106 { trace += try Self.run(seed: UInt64(seed)).trace }
        let wanted = ["→ accepted(", "→ acceptedRecoveryCode(", "→ rejected", "→ replayed(", "→ locked", "→ newPINRequired(",
                      "→ nextCodeRequired(", "(resynchronised)", "wrong PIN", "expired", "no active token", "locked now",
                      "→ resync token", "→ resync next counter", "→ error invalidInput", "→ PIN set", "→ PIN required",
                      "→ unlock: was locked true", "code-at-end → accepted(", "challenge"]
        for text in wanted {
            #expect(trace.contains { $0.contains(text) }, "no step with \"\(text)\"")
        }
    }
}
