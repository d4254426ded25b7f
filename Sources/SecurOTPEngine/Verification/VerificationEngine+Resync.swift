import SecurOTPCore

/// What `securotp resync` changed.
public struct ResyncResult: Sendable, Equatable, CustomStringConvertible {
    public let kind: TokenKind
    /// Time tokens: learned drift in steps (positive: the token runs ahead).
    public let drift: Int64
    /// HOTP: the counter the next code will use.
    public let counter: Int64

    public var description: String {
        if kind.countsEvents { return "next counter \(counter)" }
        if drift == 0 { return "no drift" }
        return "token clock \(abs(drift)) step\(abs(drift) == 1 ? "" : "s") \(drift > 0 ? "ahead" : "behind")"
    }
}

extension VerificationEngine {
    /// How far from the current position the admin's resync looks.
    static let resyncReach: Int64 = 1000

    /// The admin's resync: finds `first` followed by `second` (bare tokencodes) within ±1000
    /// positions of token `serial` among the user's active `tokens`, uses both up and stores
    /// the drift (time tokens) or counter (HOTP).
    public func resync(_ tokens: [TokenSnapshot], user: String, serial: String, first: [UInt8], second: [UInt8],
                       now: Int64) throws(StoreError) -> Decision<ResyncResult> {
        guard let candidate = tokens.first(where: { $0.record.serial == serial }) else {
            throw StoreError.noSuchToken(user: user, serial: serial)
        }
        let record = candidate.record
        guard !record.kind.answersChallenges else {
            throw StoreError(.invalidInput, "\(serial) is an OCRA token: its responses depend on challenges and cannot resynchronise it")
        }
        let seed = try openSeed(candidate.sealedSeed, record)
        let centre = currentPosition(record, now: now)
        let reach = Self.resyncReach
        let low = record.kind.countsEvents ? centre : max(0, centre - reach), high = centre + reach
        var previous: (position: Int64, matched: Bool)?
        for position in stride(from: low, through: high, by: 1) { // a wrong clock gives an empty band, not a trap
            let current = code(record, seed: seed, position: position)
            let matchesSecond = ConstantTime.equal(current, second)
            if let previous, previous.matched, matchesSecond, previous.position == position - 1, isFresh(position, record) {
                let write = try acceptance(record, position: position, now: now, learnDriftFrom: record.kind.countsEvents ? nil : centre)
                // What the token holds once the write is applied.
                var drift = record.drift, counter = Int64(bitPattern: record.parameters.counter)
                switch write {
                case .advanceStep(_, _, _, let learned, _): drift = learned
                case .advanceCounter(_, _, let next, _): counter = next
                default: break
                }
                return Decision(result: ResyncResult(kind: record.kind, drift: drift, counter: counter), writes: [write])
            }
            previous = (position, ConstantTime.equal(current, first))
        }
        throw StoreError(.invalidInput, "\(serial): the two codes are not consecutive codes of this token within ±\(reach) steps; read two fresh codes, one after the other")
    }
}
