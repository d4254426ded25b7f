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

    /// What a verification of token codes decides on, read in one statement (one snapshot):
    /// the user's active tokens and failure row — or, for a name the store knows nothing of,
    /// the failure row unknown names share, returned as the failure key (as `lockUser` does).
    func verificationRead(user: String, _ connection: PostgresConnection) async throws -> (VerifySnapshot, failureKey: String?) {
        var known = false
        var own = UserState.clear, shared = UserState.clear
        var tokens: [TokenSnapshot] = []
        for try await row in try await connection.execute(VerificationRead(user: user), logger: logger) {
            known = known || row.hasRecoveryCodes || row.hasToken
            own = row.own
            shared = row.shared
            if let token = row.token { tokens.append(token) }
        }
        guard known else { return (VerifySnapshot(failures: shared), Store.unresolvedUsersKey) }
        return (VerifySnapshot(failures: own, tokens: tokens), nil)
    }

    /// One row per active token (a row of NULL token columns when there is none), each with
    /// the failure rows and whether unused recovery codes exist.
    struct VerificationRead: PostgresPreparedStatement {
        static let sql = """
            SELECT EXISTS (SELECT 1 FROM recovery_codes WHERE "user" = $1 AND used = 0) AS has_recovery_codes,
                   own.failures AS own_failures, own.locked_until AS own_locked_until,
                   shared.failures AS shared_failures, shared.locked_until AS shared_locked_until, t.*
            FROM (SELECT 1) AS one
            LEFT JOIN users own ON own.name = $1
            LEFT JOIN users shared ON shared.name = $2
            LEFT JOIN (SELECT \(tokenColumns), sealed_seed, pin_hash FROM tokens WHERE "user" = $1 AND state = 'active') AS t ON true
            ORDER BY t.created, t.serial
            """
        let user: String

        struct Row {
            var hasRecoveryCodes: Bool
            var own: UserState
            var shared: UserState
            var hasToken: Bool
            /// nil also for a damaged row, which is skipped as in SQLite.
            var token: TokenSnapshot?
        }

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(user)
            bindings.append(Store.unresolvedUsersKey)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            let r = row.makeRandomAccess()
            func state(_ prefix: String) throws -> UserState {
                guard let failures = try r["\(prefix)_failures"].decode(Int64?.self) else { return .clear }
                return UserState(failures: Int(clamping: failures), lockedUntil: try r["\(prefix)_locked_until"].decode(Int64.self))
            }
            var read = Row(hasRecoveryCodes: try r["has_recovery_codes"].decode(Bool.self), own: try state("own"), shared: try state("shared"),
                           hasToken: try r["serial"].decode(String?.self) != nil)
            if read.hasToken, let record = TokenRecord(row: try PostgresTokenService.tokenRow(row)) {
                read.token = TokenSnapshot(record: record, sealedSeed: PostgresTokenService.bytes(try r["sealed_seed"].decode(ByteBuffer?.self)),
                                           pinHash: PostgresTokenService.bytes(try r["pin_hash"].decode(ByteBuffer?.self)))
            }
            return read
        }
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
}
