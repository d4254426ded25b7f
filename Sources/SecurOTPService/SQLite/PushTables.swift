import SecurOTPCore
import SecurOTPStore

/// Devices, push requests and per-user push state in the SQLite store (schema 5, docs/push.md).
/// Every change of a request's state is a conditional update on the state it was read in, so
/// each happens once.
struct PushTables {
    let db: SQLiteDatabase

    typealias DeviceRow = PushDeviceRow
    typealias RequestRow = PushRequestRow

    // MARK: devices

    static let deviceColumns = """
        id, user, name, aaid, state, activation_expires, public_key, certificate, credential_hash, sign_counter, user_verification, \
        unlock_hash, unlock_expires, created, last_used, offline_secret
        """

    private func device(from row: SQLiteDatabase.Statement) -> DeviceRow {
        DeviceRow(id: row.text(0), user: row.text(1), name: row.text(2), aaid: row.text(3), state: row.text(4), activationExpires: row.integer(5),
                  publicKey: row.blob(6), certificate: row.text(7), credentialHash: row.blob(8), signCounter: row.integer(9),
                  userVerification: row.integer(10) != 0, unlockHash: row.blob(11), unlockExpires: row.integer(12), created: row.integer(13),
                  lastUsed: row.integer(14), offlineSecret: row.blob(15))
    }

    func insertDevice(id: String, user: String, name: String, activationHash: [UInt8], expires: Int64, now: Int64) throws(StoreError) {
        try db.prepare("""
            INSERT INTO devices (id, user, name, state, activation_hash, activation_expires, created) VALUES (?,?,?,'pending',?,?,?)
            """).bind(.text(id), .text(user), .text(name), .blob(activationHash), .integer(expires), .integer(now)).run()
    }

    func device(id: String) throws(StoreError) -> DeviceRow? {
        let statement = try db.prepare("SELECT \(Self.deviceColumns) FROM devices WHERE id = ?")
        defer { statement.reset() }
        try statement.bind(.text(id))
        return try statement.step() ? device(from: statement) : nil
    }

    func devices(user: String?) throws(StoreError) -> [DeviceRow] {
        let statement: SQLiteDatabase.Statement
        if let user {
            statement = try db.prepare("SELECT \(Self.deviceColumns) FROM devices WHERE user = ? ORDER BY created, id")
            try statement.bind(.text(user))
        } else {
            statement = try db.prepare("SELECT \(Self.deviceColumns) FROM devices ORDER BY user, created, id")
        }
        defer { statement.reset() }
        var rows: [DeviceRow] = []
        while try statement.step() { rows.append(device(from: statement)) }
        return rows
    }

    /// The pending device an activation code names, taking the code (single use) whether or not
    /// it has expired.
    func takeActivation(hash: [UInt8]) throws(StoreError) -> DeviceRow? {
        let statement = try db.prepare("SELECT \(Self.deviceColumns) FROM devices WHERE activation_hash = ? AND state = 'pending'")
        defer { statement.reset() }
        try statement.bind(.blob(hash))
        guard try statement.step() else { return nil }
        let row = device(from: statement)
        statement.reset()
        try db.prepare("UPDATE devices SET activation_hash = NULL WHERE id = ? AND state = 'pending'").bind(.text(row.id)).run()
        return db.changes == 1 ? row : nil
    }

    func activate(id: String, name: String, aaid: String, publicKey: [UInt8], credentialHash: [UInt8], userVerification: Bool) throws(StoreError) {
        try db.prepare("""
            UPDATE devices SET state = 'active', name = ?, aaid = ?, public_key = ?, credential_hash = ?, user_verification = ?
            WHERE id = ? AND state = 'pending'
            """).bind(.text(name), .text(aaid), .blob(publicKey), .blob(credentialHash), .integer(userVerification ? 1 : 0), .text(id)).run()
        guard db.changes == 1 else { throw StoreError(.database, "device \(id) changed during activation; try again") }
    }

    /// The device's sealed offline secret, kept beside its key from activation on.
    func setOfflineSecret(id: String, sealed: [UInt8]) throws(StoreError) {
        try db.prepare("UPDATE devices SET offline_secret = ? WHERE id = ?").bind(.blob(sealed), .text(id)).run()
    }

    func hasOfflineDevice(user: String) throws(StoreError) -> Bool {
        let statement = try db.prepare("SELECT 1 FROM devices WHERE user = ? AND state = 'active' AND length(offline_secret) > 0 LIMIT 1")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step()
    }

    func deleteDevice(id: String, user: String) throws(StoreError) -> Bool {
        try db.prepare("DELETE FROM devices WHERE id = ? AND user = ?").bind(.text(id), .text(user)).run()
        return db.changes == 1
    }

    func setUnlock(id: String, hash: [UInt8], expires: Int64) throws(StoreError) {
        try db.prepare("UPDATE devices SET unlock_hash = ?, unlock_expires = ? WHERE id = ?").bind(.blob(hash), .integer(expires), .text(id)).run()
    }

    func setState(id: String, from: String, to: String) throws(StoreError) -> Bool {
        try db.prepare("UPDATE devices SET state = ? WHERE id = ? AND state = ?").bind(.text(to), .text(id), .text(from)).run()
        return db.changes == 1
    }

    /// Takes the unlock code (single use) and activates the blocked device.
    func unlock(id: String, hash: [UInt8]) throws(StoreError) -> Bool {
        try db.prepare("UPDATE devices SET state = 'active', unlock_hash = NULL, unlock_expires = 0 WHERE id = ? AND state = 'blocked' AND unlock_hash = ?")
            .bind(.text(id), .blob(hash)).run()
        return db.changes == 1
    }

    func setCertificate(id: String, certificate: String) throws(StoreError) {
        try db.prepare("UPDATE devices SET certificate = ? WHERE id = ?").bind(.text(certificate), .text(id)).run()
    }

    /// An approval's signature counter, checked first under the write lock (SignatureCounter.accepts).
    func recordUse(id: String, counter: Int64, now: Int64) throws(StoreError) {
        try db.prepare("UPDATE devices SET sign_counter = max(sign_counter, ?), last_used = ? WHERE id = ?")
            .bind(.integer(counter), .integer(now), .text(id)).run()
    }

    func hasActiveDevice(user: String) throws(StoreError) -> Bool {
        let statement = try db.prepare("SELECT 1 FROM devices WHERE user = ? AND state = 'active' LIMIT 1")
        defer { statement.reset() }
        try statement.bind(.text(user))
        return try statement.step()
    }

    // MARK: push requests

    static let requestColumns = """
        id, user, host, service, remote_address, tty, command, nonce, number, created, expires, state, wrong_numbers, device, \
        authenticator_data, client_data_json, signature, result
        """

    private func request(from row: SQLiteDatabase.Statement) -> RequestRow {
        RequestRow(id: row.text(0), user: row.text(1), host: row.text(2), service: row.text(3), remoteAddress: row.text(4), tty: row.text(5),
                   command: row.text(6), nonce: row.text(7), number: row.text(8), created: row.integer(9), expires: row.integer(10),
                   state: row.text(11), wrongNumbers: Int(row.integer(12)), device: row.text(13), authenticatorData: row.blob(14),
                   clientDataJSON: row.blob(15), signature: row.blob(16), result: row.text(17))
    }

    func insert(_ row: RequestRow) throws(StoreError) {
        // Requests are kept a day past their expiry (sweep; the audit log keeps what happened).
        try db.prepare("DELETE FROM push_requests WHERE expires < ?").bind(.integer(row.created - PushUpkeepRules.keptSeconds)).run()
        try db.prepare("""
            INSERT INTO push_requests (id, user, host, service, remote_address, tty, command, nonce, number, created, expires, state)
            VALUES (?,?,?,?,?,?,?,?,?,?,?,'pending')
            """).bind(.text(row.id), .text(row.user), .text(row.host), .text(row.service), .text(row.remoteAddress), .text(row.tty),
                      .text(row.command), .text(row.nonce), .text(row.number), .integer(row.created), .integer(row.expires)).run()
    }

    /// Ends the pending requests past their expiry (the schema's trigger blanks their context
    /// as they leave `pending`) and deletes requests a day past it (PushUpkeep). Returns the
    /// requests it ended.
    func sweep(now: Int64) throws(StoreError) -> Int {
        try db.prepare("UPDATE push_requests SET state = 'expired' WHERE state = 'pending' AND expires <= ?").bind(.integer(now)).run()
        let ended = db.changes
        // Kept a day for the record (without their context; the audit log keeps what happened).
        try db.prepare("DELETE FROM push_requests WHERE expires < ?").bind(.integer(now - PushUpkeepRules.keptSeconds)).run()
        return ended
    }

    func request(id: String) throws(StoreError) -> RequestRow? {
        let statement = try db.prepare("SELECT \(Self.requestColumns) FROM push_requests WHERE id = ?")
        defer { statement.reset() }
        try statement.bind(.text(id))
        return try statement.step() ? request(from: statement) : nil
    }

    func pendingRequests(user: String, now: Int64) throws(StoreError) -> [RequestRow] {
        let statement = try db.prepare("SELECT \(Self.requestColumns) FROM push_requests WHERE user = ? AND state = 'pending' AND expires > ? ORDER BY created, id")
        defer { statement.reset() }
        try statement.bind(.text(user), .integer(now))
        var rows: [RequestRow] = []
        while try statement.step() { rows.append(request(from: statement)) }
        return rows
    }

    /// Cancels the host's open requests for the user (one open request per user and host).
    func cancelOpen(user: String, host: String) throws(StoreError) -> Int {
        try db.prepare("UPDATE push_requests SET state = 'cancelled' WHERE user = ? AND host = ? AND state = 'pending'")
            .bind(.text(user), .text(host)).run()
        return db.changes
    }

    /// Moves a request from `from` to `to`; false when it was no longer in `from` (someone else moved it).
    func transition(id: String, from: String, to: String) throws(StoreError) -> Bool {
        try db.prepare("UPDATE push_requests SET state = ? WHERE id = ? AND state = ?").bind(.text(to), .text(id), .text(from)).run()
        return db.changes == 1
    }

    func approve(id: String, device: String, authenticatorData: [UInt8], clientDataJSON: [UInt8], signature: [UInt8]) throws(StoreError) -> Bool {
        try db.prepare("""
            UPDATE push_requests SET state = 'approved', device = ?, authenticator_data = ?, client_data_json = ?, signature = ?
            WHERE id = ? AND state = 'pending'
            """).bind(.text(device), .blob(authenticatorData), .blob(clientDataJSON), .blob(signature), .text(id)).run()
        return db.changes == 1
    }

    /// An offline response was taken: the request is consumed (never approved after it), once.
    func takeOffline(id: String, device: String) throws(StoreError) -> Bool {
        try db.prepare("UPDATE push_requests SET state = 'consumed', device = ?, result = 'offline' WHERE id = ? AND state = 'pending'")
            .bind(.text(device), .text(id)).run()
        return db.changes == 1
    }

    /// One more wrong number; returns the count after it.
    func countWrongNumber(id: String, expected: Int) throws(StoreError) -> Int? {
        try db.prepare("UPDATE push_requests SET wrong_numbers = wrong_numbers + 1 WHERE id = ? AND state = 'pending' AND wrong_numbers = ?")
            .bind(.text(id), .integer(Int64(expected))).run()
        return db.changes == 1 ? expected + 1 : nil
    }

    func recordResult(id: String, host: String, result: String) throws(StoreError) -> Bool {
        try db.prepare("UPDATE push_requests SET result = ? WHERE id = ? AND host = ? AND state = 'consumed' AND result = ''")
            .bind(.text(result), .text(id), .text(host)).run()
        return db.changes == 1
    }

    func cancelAll(user: String) throws(StoreError) {
        try db.prepare("UPDATE push_requests SET state = 'cancelled' WHERE user = ? AND state IN ('pending', 'approved')").bind(.text(user)).run()
    }

    // MARK: per-user push state

    func pushUser(_ user: String) throws(StoreError) -> (blocked: Bool, countedUntil: Int64) {
        let statement = try db.prepare("SELECT blocked, counted_until FROM push_users WHERE user = ?")
        defer { statement.reset() }
        try statement.bind(.text(user))
        guard try statement.step() else { return (false, 0) }
        return (statement.integer(0) != 0, statement.integer(1))
    }

    /// Stores what PushRate.admit returned for the request just opened.
    func countRequest(user: String, countedUntil: Int64) throws(StoreError) {
        try db.prepare("""
            INSERT INTO push_users (user, counted_until) VALUES (?, ?) ON CONFLICT(user) DO UPDATE SET counted_until = excluded.counted_until
            """).bind(.text(user), .integer(countedUntil)).run()
    }

    /// A successful login clears the requests counted against push_limit.
    func resetCount(user: String) throws(StoreError) {
        try db.prepare("UPDATE push_users SET counted_until = 0 WHERE user = ? AND counted_until <> 0").bind(.text(user)).run()
    }

    func block(user: String) throws(StoreError) {
        try db.prepare("INSERT INTO push_users (user, blocked) VALUES (?, 1) ON CONFLICT(user) DO UPDATE SET blocked = 1").bind(.text(user)).run()
    }

    /// Returns whether pushes were blocked.
    func unblock(user: String) throws(StoreError) -> Bool {
        let was = try pushUser(user).blocked
        try db.prepare("DELETE FROM push_users WHERE user = ?").bind(.text(user)).run()
        return was
    }
}
