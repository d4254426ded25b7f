import SecurOTPCore
import SecurOTPStore

/// The validator daemon's own tables in the SQLite store (schema 4): credentials, the audit
/// log, pending challenges and offline grants. The PAM module never reads them.
struct AccessTables {
    let db: SQLiteDatabase

    // MARK: credentials

    static let credentialColumns = "id, kind, name, secret_hash, users, groups, offline_codes, created, revoked, last_used"

    private func credential(from row: SQLiteDatabase.Statement) -> CredentialRecord? {
        guard let kind = CredentialKind(rawValue: row.text(1)) else { return nil }
        return CredentialRecord(id: row.text(0), kind: kind, name: row.text(2), secretHash: row.blob(3), users: Self.list(row.text(4)),
                             groups: Self.list(row.text(5)), offlineCodes: Int(row.integer(6)), created: row.integer(7),
                             revoked: row.integer(8), lastUsed: row.integer(9))
    }

    /// Nil when an active credential of that kind and name exists already.
    func insert(_ row: CredentialRecord) throws(StoreError) -> Bool {
        let exists = try db.prepare("SELECT 1 FROM credentials WHERE kind = ? AND name = ? AND revoked = 0")
        defer { exists.reset() }
        try exists.bind(.text(row.kind.rawValue), .text(row.name))
        if try exists.step() { return false }
        try db.prepare("INSERT INTO credentials (\(Self.credentialColumns)) VALUES (?,?,?,?,?,?,?,?,0,0)")
            .bind(.text(row.id), .text(row.kind.rawValue), .text(row.name), .blob(row.secretHash), .text(row.users.joined(separator: ",")),
                  .text(row.groups.joined(separator: ",")), .integer(Int64(row.offlineCodes)), .integer(row.created))
            .run()
        return true
    }

    func credential(id: String) throws(StoreError) -> CredentialRecord? {
        let statement = try db.prepare("SELECT \(Self.credentialColumns) FROM credentials WHERE id = ?")
        defer { statement.reset() }
        try statement.bind(.text(id))
        return try statement.step() ? credential(from: statement) : nil
    }

    func credentials(kind: CredentialKind) throws(StoreError) -> [CredentialRecord] {
        let statement = try db.prepare("SELECT \(Self.credentialColumns) FROM credentials WHERE kind = ? ORDER BY revoked <> 0, name, created")
        try statement.bind(.text(kind.rawValue))
        var rows: [CredentialRecord] = []
        while try statement.step() { if let row = credential(from: statement) { rows.append(row) } }
        return rows
    }

    /// Returns whether an active credential of that name existed.
    func revoke(kind: CredentialKind, name: String, now: Int64) throws(StoreError) -> Bool {
        try db.prepare("UPDATE credentials SET revoked = ? WHERE kind = ? AND name = ? AND revoked = 0")
            .bind(.integer(now), .text(kind.rawValue), .text(name)).run()
        return db.changes > 0
    }

    func touch(id: String, now: Int64) throws(StoreError) {
        try db.prepare("UPDATE credentials SET last_used = ? WHERE id = ?").bind(.integer(now), .text(id)).run()
    }

    // MARK: audit

    /// Stores `entry` bounded and printable (AuditEntry.bounded).
    func append(_ entry: AuditEntry) throws(StoreError) {
        let entry = entry.bounded()
        try db.prepare("""
            INSERT INTO audit (time, actor_kind, actor, address, action, user, serial, result, detail) VALUES (?,?,?,?,?,?,?,?,?)
            """).bind(.integer(entry.time), .text(entry.actorKind), .text(entry.actor), .text(entry.address), .text(entry.action),
                      .text(entry.user), .text(entry.serial), .text(entry.result), .text(entry.detail)).run()
    }

    /// Newest first.
    func audit(user: String?, limit: Int) throws(StoreError) -> [AuditEntry] {
        let columns = "id, time, actor_kind, actor, address, action, user, serial, result, detail"
        let statement: SQLiteDatabase.Statement
        if let user {
            statement = try db.prepare("SELECT \(columns) FROM audit WHERE user = ? ORDER BY id DESC LIMIT ?")
            try statement.bind(.text(user), .integer(Int64(limit)))
        } else {
            statement = try db.prepare("SELECT \(columns) FROM audit ORDER BY id DESC LIMIT ?")
            try statement.bind(.integer(Int64(limit)))
        }
        var entries: [AuditEntry] = []
        while try statement.step() {
            entries.append(AuditEntry(id: statement.integer(0), time: statement.integer(1), actorKind: statement.text(2),
                                      actor: statement.text(3), address: statement.text(4), action: statement.text(5),
                                      user: statement.text(6), serial: statement.text(7), result: statement.text(8),
                                      detail: statement.text(9)))
        }
        return entries
    }

    func pruneAudit(before time: Int64) throws(StoreError) -> Int {
        try db.prepare("DELETE FROM audit WHERE time < ?").bind(.integer(time)).run()
        return db.changes
    }

    // MARK: challenges

    func insert(_ challenge: PendingChallenge) throws(StoreError) {
        try db.prepare("DELETE FROM challenges WHERE expires <= ?").bind(.integer(challenge.expires - PendingChallenge.lifetime)).run()
        try db.prepare("""
            INSERT INTO challenges (id, user, host, kind, serial, position, pin_mode, remaining, expires) VALUES (?,?,?,?,?,?,?,?,?)
            """).bind(.text(challenge.id), .text(challenge.user), .text(challenge.host), .text(challenge.kind.rawValue),
                      .text(challenge.serial), .integer(challenge.position), .text(challenge.pinMode.rawValue),
                      .integer(Int64(challenge.remaining)), .integer(challenge.expires)).run()
    }

    /// Removes and returns the challenge: each is answered at most once. Nil when unknown,
    /// expired, or issued to another user or host.
    func take(id: String, user: String, host: String, now: Int64) throws(StoreError) -> PendingChallenge? {
        let select = try db.prepare("SELECT kind, serial, position, pin_mode, remaining, expires FROM challenges WHERE id = ? AND user = ? AND host = ?")
        defer { select.reset() }
        try select.bind(.text(id), .text(user), .text(host))
        guard try select.step(), let kind = PendingKind(rawValue: select.text(0)), let pinMode = PINMode(rawValue: select.text(3)) else { return nil }
        let challenge = PendingChallenge(id: id, user: user, host: host, kind: kind, serial: select.text(1), position: select.integer(2),
                                         pinMode: pinMode, remaining: Int(select.integer(4)), expires: select.integer(5))
        select.reset()
        try db.prepare("DELETE FROM challenges WHERE id = ?").bind(.text(id)).run()
        guard db.changes == 1, challenge.expires > now else { return nil }
        return challenge
    }

    // MARK: offline reservations

    func reservations(host: String, user: String) throws(StoreError) -> [OfflineReservation] {
        let statement = try db.prepare("SELECT serial, first, last FROM offline_grants WHERE host = ? AND user = ? ORDER BY serial")
        try statement.bind(.text(host), .text(user))
        var reservations: [OfflineReservation] = []
        while try statement.step() {
            reservations.append(OfflineReservation(serial: statement.text(0), first: statement.integer(1), last: statement.integer(2)))
        }
        return reservations
    }

    /// Codes the host used while offline: its reservations start after them.
    func withdraw(host: String, user: String, usage: [OfflineUsage]) throws(StoreError) {
        for used in usage {
            try db.prepare("UPDATE offline_grants SET first = ?1 WHERE host = ?2 AND user = ?3 AND serial = ?4 AND first < ?1")
                .bind(.integer(used.nextUnused), .text(host), .text(user), .text(used.serial)).run()
        }
    }

    /// A reserved code accepted online: only from the position the snapshot read (exactly once).
    func consume(host: String, _ consumed: OfflineReservation, expectedFirst: Int64) throws(StoreError) {
        try db.prepare("UPDATE offline_grants SET first = ? WHERE host = ? AND serial = ? AND first = ?")
            .bind(.integer(consumed.first), .text(host), .text(consumed.serial), .integer(expectedFirst)).run()
        guard db.changes == 1 else { throw StoreError(.database, "offline codes of token \(consumed.serial) changed during verification; try again") }
    }

    func save(host: String, user: String, _ reservation: OfflineReservation) throws(StoreError) {
        try db.prepare("""
            INSERT INTO offline_grants (host, serial, user, first, last) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(host, serial) DO UPDATE SET user = ?3, first = ?4, last = ?5
            """).bind(.text(host), .text(reservation.serial), .text(user), .integer(reservation.first), .integer(reservation.last)).run()
    }

    /// A deleted token, or a reset user, takes its reservations with it.
    func dropReservations(user: String, serial: String? = nil) throws(StoreError) {
        if let serial {
            try db.prepare("DELETE FROM offline_grants WHERE user = ? AND serial = ?").bind(.text(user), .text(serial)).run()
        } else {
            try db.prepare("DELETE FROM offline_grants WHERE user = ?").bind(.text(user)).run()
        }
    }

    /// The host's reservations for the user, when otp left the user's methods: a host that
    /// hears of it deletes its cache too (docs/design.md, "Login methods in remote mode").
    func dropReservations(host: String, user: String) throws(StoreError) {
        try db.prepare("DELETE FROM offline_grants WHERE host = ? AND user = ?").bind(.text(host), .text(user)).run()
    }

    static func list(_ text: String) -> [String] { text.split(separator: ",").map(String.init) }
}
