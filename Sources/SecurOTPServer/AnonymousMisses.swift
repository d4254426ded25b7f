import Foundation
import Logging
import NIOConcurrencyHelpers
import SecurOTPService
import ServiceLifecycle

/// Refused activation codes (`POST /v1/devices/activate`, no credential), audited in aggregate
/// (issue 25): one audit entry per client address and period, with the count, instead of a
/// committed row per refusal, which let one connection bury the audit log under ~1,600 rows a
/// second kept for a year. Held in this node's memory until `flush`; at most `maxAddresses`
/// addresses a period, the rest counted together as "other addresses".
public final class AnonymousMisses: Sendable {
    public static let maxAddresses = 1_000
    static let otherAddresses = "other addresses"

    private struct State {
        var counts: [String: Int] = [:]
        var since: Int64
    }

    private let state: NIOLockedValueBox<State>

    public init(now: Int64 = Int64(Date().timeIntervalSince1970)) { state = NIOLockedValueBox(State(since: now)) }

    public func record(address: String) {
        state.withLockedValue {
            let key = $0.counts[address] != nil || $0.counts.count < Self.maxAddresses ? address : Self.otherAddresses
            $0.counts[key, default: 0] += 1
        }
    }

    /// The aggregate entries since the last flush (one per address), and a new period from `now`.
    public func flush(now: Int64) -> [AuditEntry] {
        let (counts, since) = state.withLockedValue { state -> ([String: Int], Int64) in
            defer { state = State(since: now) }
            return (state.counts, state.since)
        }
        return counts.sorted { $0.key < $1.key }.map { address, count in
            AuditEntry(time: now, actorKind: "device", actor: "", address: address, action: "device activate", user: "", serial: "",
                       result: "denied", detail: "\(count) refused activation code\(count == 1 ? "" : "s") (unknown, used or expired) in the last \(max(0, now - since)) s")
        }
    }

    /// Writes the aggregate entries through `service`.
    public func flush(into service: any TokenService, now: Int64) async {
        for entry in flush(now: now) { await service.record(entry) }
    }
}

/// Flushes AnonymousMisses every minute and at shutdown.
struct AnonymousMissesFlusher: Service {
    let misses: AnonymousMisses
    let service: any TokenService

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(60))
                await misses.flush(into: service, now: service.clock.now())
            }
        }
        await misses.flush(into: service, now: service.clock.now())
    }
}

/// Runs PushUpkeep's sweep every `PushUpkeepRules.sweepSeconds`: pending requests past their
/// expiry end, and with them their context (docs/push.md, "What leaves the host").
struct PushSweeper: Service {
    let upkeep: any PushUpkeep
    let clock: ServiceClock
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do throws(ServiceError) {
                    _ = try await upkeep.sweepPushRequests(now: clock.now())
                } catch {
                    logger.warning("sweeping push requests failed", metadata: ["error": "\(error.message)"])
                }
                try await Task.sleep(for: .seconds(PushUpkeepRules.sweepSeconds))
            }
        }
    }
}
