import Foundation
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import Testing
import TestSupport

/// The host pipeline (HostVerification) over its storage adapters, each behind the service
/// facade: the SQLite store, PostgreSQL (batch path and lock path) and the tests' memory
/// backend (`MemoryTokenService`). All answer the same random sequence of host calls — right,
/// early, replayed and wrong codes, next-code and new-PIN dialogues, recovery codes, unknown
/// names, a host with offline codes, unlocks — and must give the same answers and keep the
/// same token rows after every step. (The engine-level DifferentialTests compare the SQLite
/// store with the memory backend without the pipeline.)
@Suite("Pipeline: SQLite, PostgreSQL and memory answer alike")
struct PipelineDifferentialTests {
    static let host = Caller(kind: .host, name: "web1", address: "127.0.0.1")
    /// A host that keeps three offline codes per user (its credential hash peppers them).
    static let offlineHost = Caller(kind: .host, name: "laptop", address: "127.0.0.1", offlineCodes: 3, credentialHash: Array(repeating: 7, count: 32))
    static let hotpSecret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
    static let totpSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

    /// One backend under test, with what differs between them by construction: token serials
    /// and recovery codes are random per store.
    final class Side {
        let name: String
        let service: any TokenService
        let cleanUp: () async -> Void
        var names: [String: String] = [:]
        var recoveryCodes: [String] = []
        var pending: ChallengeInfo?

        init(_ name: String, _ fixture: ValidatorFixture) {
            self.name = name
            service = fixture.service
            cleanUp = { await fixture.cleanUp() }
        }

        init(memory: MemoryTokenService) {
            name = "memory"
            service = memory
            cleanUp = {}
        }

        func setUp() async throws {
            for (user, uri) in [("alice", "otpauth://hotp/alice?secret=\(PipelineDifferentialTests.hotpSecret)&counter=0"),
                                ("bob", "otpauth://totp/bob?secret=\(PipelineDifferentialTests.totpSecret)")] {
                let list = try await service.importTokens(user: user, ImportRequest(source: Data(uri.utf8).base64EncodedString()),
                                                          caller: .local("test"))
                for token in list.tokens { names[token.serial] = "\(user)-token" }
            }
            recoveryCodes = try await service.recoveryCodes(user: "carol", RecoveryCodesRequest(count: 3), caller: .local("test")).codes
        }

        /// The answer with what is random per store replaced by names.
        func normalised(_ response: VerifyResponse) -> String {
            var text = "\(response.result.rawValue) reason=\(response.reason ?? "-") failures=\(response.failures.map(String.init) ?? "-")"
            text += " lockedNow=\(response.lockedNow.map { "\($0)" } ?? "-") info=\(response.info ?? "-") error=\(response.error ?? "-")"
            text += " digits=\(response.codeDigits.map(String.init) ?? "-") serial=\(response.serial.map { names[$0] ?? $0 } ?? "-")"
            if let challenge = response.challenge { text += " challenge=\(challenge.kind.rawValue):\(challenge.prompt)" }
            for codes in response.offline ?? [] {
                text += " offline=\(names[codes.serial] ?? codes.serial):\(codes.firstValid):\(codes.codes.map(\.counter))"
            }
            for (serial, name) in names { text = text.replacingOccurrences(of: serial, with: name) }
            return text
        }

        /// Every token row as the admin API lists it, times left out (they are seconds apart).
        func rows() async throws -> [String] {
            try await service.tokens(user: nil, caller: .local("test")).tokens.map { token in
                "\(names[token.serial] ?? "?") \(token.state) counter=\(token.counter.map(String.init) ?? "-") drift=\(token.drift) "
                    + "pin=\(token.pinMode)/\(token.pinSet)/\(token.pinChangeRequired) locked=\(token.userLocked.map { "\($0)" } ?? "-")"
            }.sorted()
        }
    }

    /// A host call both sides make; `input` gets each side's own recovery codes.
    enum Call {
        case verify(user: String, passcode: (Side) -> String, caller: Caller)
        case answer(user: String, answer: String)
        case unlock(String)
        case requirePIN
    }

    @Test("Random host calls on every backend: same answers, same rows", arguments: [1, 2, 3])
    func sameAnswers(seed: Int) async throws {
        // One time that stands still for every side, mid-step: all see the same TOTP step.
        let clock = TestClock(frozenAt: Int64(time(nil)) / 30 * 30 + 15)
        var sides = [Side("SQLite", try await ValidatorFixture.make(.sqlite, clock: clock)), Side(memory: try MemoryTokenService(clock: clock.service))]
        if TestPostgres.enabled { sides.insert(Side("PostgreSQL", try await ValidatorFixture.make(.postgres, clock: clock)), at: 1) }
        do {
            try await play(seed: seed, sides, at: clock.now())
        } catch {
            for side in sides { await side.cleanUp() }
            throw error
        }
        for side in sides { await side.cleanUp() }
    }

    /// `sides[0]` leads: its pending challenge decides what the next answer is.
    /// `now`: the sides' time (a TestClock that stands still).
    func play(seed: Int, _ sides: [Side], at now: Int64) async throws {
        let sqlite = sides[0]
        for side in sides { try await side.setUp() }
        var random = SplitMix64(seed: UInt64(seed))
        var counter: UInt64 = 0
        var lastTried: UInt64 = 0
        var pin = ""
        var seen: Set<String> = []
        for step in 0..<90 {
            let call: Call
            switch random.below(100) {
            case 0..<30:
                let offset = [0, 0, 0, -1, 1, 2, 5, 40].randomElement(using: &random) ?? 0
                lastTried = UInt64(max(0, Int64(counter) + Int64(offset)))
                let code = Codes.hotp(Self.hotpSecret, counter: lastTried)
                let caller = random.below(4) == 0 ? Self.offlineHost : Self.host
                call = .verify(user: "alice", passcode: { _ in pin + code }, caller: caller)
            case 30..<45:
                let code = random.below(3) == 0 ? Codes.wrongTOTP(Self.totpSecret, at: now)
                                                 : Codes.totp(Self.totpSecret, offset: Int64(random.below(3)) - 1, at: now)
                call = .verify(user: "bob", passcode: { _ in code }, caller: Self.host)
            case 45..<55:
                let index = random.below(3)
                call = .verify(user: "carol", passcode: { $0.recoveryCodes[index] }, caller: Self.host)
            case 55..<62:
                call = .verify(user: ["mallory", "nobody"].randomElement(using: &random) ?? "mallory", passcode: { _ in "123456" }, caller: Self.host)
            case 62..<68:
                call = .unlock(["alice", "bob", "carol", "mallory"].randomElement(using: &random) ?? "alice")
            case 68..<72 where pin.isEmpty:
                call = .requirePIN
            default:
                guard let pending = sqlite.pending else { continue }
                let answer: String
                switch pending.kind {
                case .newPIN: answer = random.below(4) == 0 ? "12" : "4711"
                case .passcode: answer = "4711" + Codes.hotp(Self.hotpSecret, counter: counter)
                default: answer = pin + Codes.hotp(Self.hotpSecret, counter: lastTried + UInt64(random.below(3) == 0 ? 2 : 1))
                }
                call = .answer(user: "alice", answer: answer)
            }
            var answers: [String] = []
            for side in sides {
                switch call {
                case .verify(let user, let passcode, let caller):
                    let response = try await side.service.verify(VerifyRequest(user: user, passcode: passcode(side)), caller: caller)
                    side.pending = response.challenge
                    answers.append(side.normalised(response))
                case .answer(let user, let answer):
                    guard let pending = side.pending else { answers.append("no challenge"); continue }
                    let response = try await side.service.answer(AnswerRequest(user: user, challengeId: pending.id, answer: answer), caller: Self.host)
                    side.pending = response.challenge
                    answers.append(side.normalised(response))
                case .unlock(let user):
                    answers.append("unlock \(try await side.service.unlock(user: user, caller: .local("test")).wasLocked)")
                case .requirePIN:
                    let serial = try #require(side.names.first { $0.value == "alice-token" }?.key)
                    try await side.service.requirePIN(user: "alice", serial: serial, caller: .local("test"))
                    answers.append("PIN required")
                }
            }
            var agree = true
            let sqliteRows = try await sqlite.rows()
            for (index, side) in sides.enumerated().dropFirst() {
                #expect(answers[index] == answers[0], "step \(step) (seed \(seed)): \(side.name) answered differently from \(sqlite.name)")
                let rows = try await side.rows()
                #expect(rows == sqliteRows, "step \(step) (seed \(seed)): \(side.name)'s rows differ from \(sqlite.name)'s after \(answers[0])")
                agree = agree && answers[index] == answers[0] && rows == sqliteRows
            }
            guard agree else { return }
            seen.insert(String(answers[0].prefix { $0 != " " }) + (answers[0].contains("challenge=") ? "+challenge" : ""))
            // Follow alice's counter and PIN from what both stores now hold.
            if let row = sqliteRows.first(where: { $0.hasPrefix("alice-token") }),
               let value = row.split(separator: " ").first(where: { $0.hasPrefix("counter=") })?.dropFirst(8) {
                counter = UInt64(value) ?? counter
            }
            if answers[0].contains("reason=new PIN set") { pin = "4711" }
        }
        for outcome in ["accept", "reject", "locked", "challenge+challenge"] {
            #expect(seen.contains(outcome), "seed \(seed) never reached \(outcome): \(seen)")
        }
    }
}

