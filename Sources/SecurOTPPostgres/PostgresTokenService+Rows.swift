import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Reading the engine's snapshot and applying its writes, in PostgreSQL's SQL.
extension PostgresTokenService {
    static let tokenColumns = """
        serial, "user", kind, algorithm, digits, period, counter, last_step, nickname, issuer, state, created, last_used, \
        pin_mode, pin_hash IS NOT NULL AS has_pin, pin_length, pin_change_required, expires, drift, source, suite
        """

    static func tokenRow(_ row: PostgresRow) throws -> TokenRow {
        let r = row.makeRandomAccess()
        var token = TokenRow()
        token.serial = try r["serial"].decode(String.self)
        token.user = try r["user"].decode(String.self)
        token.kind = try r["kind"].decode(String.self)
        token.algorithm = try r["algorithm"].decode(String.self)
        token.digits = try r["digits"].decode(Int64.self)
        token.period = try r["period"].decode(Int64.self)
        token.counter = try r["counter"].decode(Int64.self)
        token.lastStep = try r["last_step"].decode(Int64.self)
        token.nickname = try r["nickname"].decode(String.self)
        token.issuer = try r["issuer"].decode(String.self)
        token.state = try r["state"].decode(String.self)
        token.created = try r["created"].decode(Int64.self)
        token.lastUsed = try r["last_used"].decode(Int64.self)
        token.pinMode = try r["pin_mode"].decode(String.self)
        token.hasPIN = try r["has_pin"].decode(Bool.self)
        token.pinLength = try r["pin_length"].decode(Int64.self)
        token.pinChangeRequired = try r["pin_change_required"].decode(Bool.self)
        token.expires = try r["expires"].decode(Int64.self)
        token.drift = try r["drift"].decode(Int64.self)
        token.source = try r["source"].decode(String.self)
        token.suite = try r["suite"].decode(String.self)
        return token
    }

    static func bytes(_ buffer: ByteBuffer?) -> [UInt8] { buffer.map { Array($0.readableBytesView) } ?? [] }

    /// Byte arrays go to PostgreSQL as bytea only inside a ByteBuffer ([UInt8] would bind as "char"[]).
    static func bytea(_ bytes: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: bytes) }

    /// Tokens of one user (or everyone), oldest first; damaged rows are skipped as in SQLite.
    func tokens(user: String?, _ connection: PostgresConnection) async throws -> [TokenRecord] {
        let rows = if let user {
            try await connection.query("SELECT \(unescaped: Self.tokenColumns) FROM tokens WHERE \"user\" = \(user) ORDER BY created, serial", logger: logger)
        } else {
            try await connection.query("SELECT \(unescaped: Self.tokenColumns) FROM tokens ORDER BY \"user\", created, serial", logger: logger)
        }
        var records: [TokenRecord] = []
        for try await row in rows {
            if let record = TokenRecord(row: try Self.tokenRow(row)) { records.append(record) }
        }
        return records
    }

    /// The user's active tokens with their sealed seeds and PIN hashes.
    func activeTokens(user: String, _ connection: PostgresConnection) async throws -> [TokenSnapshot] {
        let rows = try await connection.query("""
            SELECT \(unescaped: Self.tokenColumns), sealed_seed, pin_hash FROM tokens
            WHERE "user" = \(user) AND state = 'active' ORDER BY created, serial
            """, logger: logger)
        var snapshots: [TokenSnapshot] = []
        for try await row in rows {
            guard let record = TokenRecord(row: try Self.tokenRow(row)) else { continue }
            let r = row.makeRandomAccess()
            snapshots.append(TokenSnapshot(record: record, sealedSeed: Self.bytes(try r["sealed_seed"].decode(ByteBuffer?.self)),
                                           pinHash: Self.bytes(try r["pin_hash"].decode(ByteBuffer?.self))))
        }
        return snapshots
    }

    func failures(_ key: String, _ connection: PostgresConnection) async throws -> UserState {
        for try await (failures, lockedUntil) in try await connection.query(
            "SELECT failures, locked_until FROM users WHERE name = \(key)", logger: logger).decode((Int64, Int64).self) {
            return UserState(failures: Int(clamping: failures), lockedUntil: lockedUntil)
        }
        return .clear
    }

    func unusedRecoveryCodes(user: String, _ connection: PostgresConnection) async throws -> [RecoveryCodeRow] {
        var codes: [RecoveryCodeRow] = []
        for try await (id, hash) in try await connection.query(
            "SELECT id, hash FROM recovery_codes WHERE \"user\" = \(user) AND used = 0", logger: logger).decode((String, ByteBuffer).self) {
            codes.append(RecoveryCodeRow(id: id, hash: Array(hash.readableBytesView)))
        }
        return codes
    }

    /// Whether a query that ends in RETURNING changed a row.
    private func changed(_ rows: PostgresRowSequence) async throws -> Bool {
        var count = 0
        for try await _ in rows { count += 1 }
        return count == 1
    }

    /// Applies the engine's writes in the caller's transaction; a write that changes no row
    /// throws its conflict and the transaction rolls back (StateWrite's contract).
    func apply(_ writes: [StateWrite], _ connection: PostgresConnection) async throws {
        for write in writes {
            guard try await changed(try await query(for: write, connection)) else { throw write.conflict }
        }
    }

    private func query(for write: StateWrite, _ connection: PostgresConnection) async throws -> PostgresRowSequence {
        switch write {
        case .advanceStep(let serial, let from, let to, let drift, let lastUsed):
            return try await connection.query("""
                UPDATE tokens SET last_step = \(to), last_used = \(lastUsed), drift = \(drift)
                WHERE serial = \(serial) AND last_step = \(from) AND \(to) > \(from) RETURNING 1
                """, logger: logger)
        case .advanceCounter(let serial, let from, let to, let lastUsed):
            return try await connection.query("""
                UPDATE tokens SET counter = \(to), last_used = \(lastUsed)
                WHERE serial = \(serial) AND counter = \(from) AND \(to) > \(from) RETURNING 1
                """, logger: logger)
        case .markUsed(let serial, let lastUsed):
            return try await connection.query("UPDATE tokens SET last_used = \(lastUsed) WHERE serial = \(serial) RETURNING 1", logger: logger)
        case .spendRecoveryCode(let user, let id, let usedAt):
            return try await connection.query("""
                UPDATE recovery_codes SET used = \(usedAt) WHERE "user" = \(user) AND id = \(id) AND used = 0 RETURNING 1
                """, logger: logger)
        case .setFailures(let key, let expected, let to, let at):
            let failures = Int64(to.failures)
            if expected == .clear {
                return try await connection.query("""
                    INSERT INTO users (name, failures, locked_until, last_failure) VALUES (\(key), \(failures), \(to.lockedUntil), \(at))
                    ON CONFLICT (name) DO UPDATE SET failures = EXCLUDED.failures, locked_until = EXCLUDED.locked_until,
                        last_failure = EXCLUDED.last_failure
                    WHERE users.failures = 0 AND users.locked_until = 0 RETURNING 1
                    """, logger: logger)
            }
            return try await connection.query("""
                UPDATE users SET failures = \(failures), locked_until = \(to.lockedUntil), last_failure = \(at)
                WHERE name = \(key) AND failures = \(Int64(expected.failures)) AND locked_until = \(expected.lockedUntil) RETURNING 1
                """, logger: logger)
        case .clearFailures(let key, let expected):
            return try await connection.query("""
                DELETE FROM users WHERE name = \(key) AND failures = \(Int64(expected.failures)) AND locked_until = \(expected.lockedUntil) RETURNING 1
                """, logger: logger)
        case .setPIN(let user, let serial, let mode, let hash, let length):
            return try await connection.query("""
                UPDATE tokens SET pin_mode = \(mode.rawValue), pin_hash = \(Self.bytea(hash)), pin_length = \(Int64(length)), pin_change_required = false
                WHERE "user" = \(user) AND serial = \(serial) RETURNING 1
                """, logger: logger)
        case .clearPIN(let user, let serial):
            return try await connection.query("""
                UPDATE tokens SET pin_mode = 'none', pin_hash = NULL, pin_length = 0, pin_change_required = false
                WHERE "user" = \(user) AND serial = \(serial) RETURNING 1
                """, logger: logger)
        case .requirePIN(let user, let serial, let mode):
            return try await connection.query("""
                UPDATE tokens SET pin_mode = \(mode.rawValue), pin_change_required = true WHERE "user" = \(user) AND serial = \(serial) RETURNING 1
                """, logger: logger)
        }
    }
}
