extension Store {
    /// The admin's resync (see VerificationEngine.resync), in one BEGIN IMMEDIATE transaction.
    public func resync(user: String, serial: String, first: [UInt8], second: [UInt8], now: Int64) throws(StoreError) -> ResyncResult {
        try db.immediateTransaction { () throws(StoreError) -> ResyncResult in
            let decision = try engine.resync(try activeTokens(user: user), user: user, serial: serial, first: first, second: second, now: now)
            try apply(decision.writes)
            return decision.result
        }
    }
}
