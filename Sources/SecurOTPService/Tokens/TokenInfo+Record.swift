import SecurOTPStore

extension TokenInfo {
    /// The API's view of a stored token (the same fields `securotp list --format json` shows).
    public init(_ record: TokenRecord, userLocked: Bool? = nil) {
        let p = record.parameters
        let counting = record.kind.countsEvents
        self.init(serial: record.serial, user: record.user, nickname: record.nickname, kind: record.kind.rawValue,
                  algorithm: record.kind.algorithmName(record), digits: p.digits,
                  period: counting ? nil : p.period, counter: counting ? Int64(bitPattern: p.counter) : nil,
                  issuer: record.issuer, state: record.state, created: record.created, lastUsed: record.lastUsed,
                  expires: record.expires, pinMode: record.pinMode.rawValue, pinSet: record.hasPIN,
                  pinChangeRequired: record.pinChangeRequired, source: record.source,
                  suite: record.kind == .ocra ? record.suite : nil, drift: record.drift, userLocked: userLocked)
    }

    /// A PIN mode and no PIN yet (or a required change): the next login sets one.
    public var needsNewPIN: Bool { pinMode != "none" && (!pinSet || pinChangeRequired) }

    public func isExpired(at now: Int64) -> Bool { expires > 0 && now >= expires }
}

extension ResyncResponse {
    public init(_ result: ResyncResult) {
        self.init(kind: result.kind.rawValue, drift: result.drift, counter: result.counter, description: result.description)
    }
}
