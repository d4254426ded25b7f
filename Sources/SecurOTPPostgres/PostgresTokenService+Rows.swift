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
        var columns = row.makeIterator()
        return try tokenRow(&columns)
    }

    /// The `tokenColumns`, in their order, from where `columns` stands.
    static func tokenRow(_ columns: inout PostgresRow.Iterator) throws -> TokenRow {
        var token = TokenRow()
        token.serial = try next(&columns)
        try rest(of: &token, &columns)
        return token
    }

    /// Every token column after the serial (a caller that reads the serial itself, as
    /// VerificationRead does to tell a missing token from a present one, goes on from here).
    static func rest(of token: inout TokenRow, _ columns: inout PostgresRow.Iterator) throws {
        token.user = try next(&columns)
        token.kind = try next(&columns)
        token.algorithm = try next(&columns)
        token.digits = try next(&columns)
        token.period = try next(&columns)
        token.counter = try next(&columns)
        token.lastStep = try next(&columns)
        token.nickname = try next(&columns)
        token.issuer = try next(&columns)
        token.state = try next(&columns)
        token.created = try next(&columns)
        token.lastUsed = try next(&columns)
        token.pinMode = try next(&columns)
        token.hasPIN = try next(&columns)
        token.pinLength = try next(&columns)
        token.pinChangeRequired = try next(&columns)
        token.expires = try next(&columns)
        token.drift = try next(&columns)
        token.source = try next(&columns)
        token.suite = try next(&columns)
    }

    /// The next column, decoded; a row shorter than its statement's columns is an error.
    static func next<T: PostgresDecodable>(_ columns: inout PostgresRow.Iterator) throws -> T {
        guard let cell = columns.next() else { throw StoreError(.database, "a row had fewer columns than its statement") }
        return try cell.decode(T.self)
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

    /// What verifications of token codes decide on, read in one statement (one snapshot) for
    /// several users: each user's active tokens and failure row — or, for a name the store
    /// knows nothing of, the failure row unknown names share, returned as the failure key (as
    /// `lockUser` does). Keyed by user name.
    func verificationReads(users: [String], _ connection: PostgresConnection) async throws
        -> [String: (snapshot: VerifySnapshot, failureKey: String?, policy: String?)] {
        struct Collected {
            var known = false, own = UserState.clear, shared = UserState.clear, tokens: [TokenSnapshot] = [], policy: String?
        }
        var collected: [String: Collected] = [:]
        for try await row in try await connection.execute(VerificationRead(users: users), logger: logger) {
            var entry = collected[row.user] ?? Collected()
            entry.known = entry.known || row.hasRecoveryCodes || row.hasToken
            entry.own = row.own
            entry.shared = row.shared
            entry.policy = row.policy
            if let token = row.token { entry.tokens.append(token) }
            collected[row.user] = entry
        }
        return collected.mapValues { entry in
            entry.known ? (VerifySnapshot(failures: entry.own, tokens: entry.tokens), nil, entry.policy)
                : (VerifySnapshot(failures: entry.shared), Store.unresolvedUsersKey, entry.policy)
        }
    }

    /// Per user asked about, one row per active token (a row of NULL token columns when there
    /// is none), each with the failure rows, whether unused recovery codes exist and the
    /// user's own method policy (`/v1/verify` applies no group's: MethodRules). Decoded
    /// by position: the columns are fixed here, and a row is decoded per verification.
    struct VerificationRead: PostgresPreparedStatement {
        static let sql = """
            SELECT asked.name, EXISTS (SELECT 1 FROM recovery_codes WHERE "user" = asked.name AND used = 0),
                   own.failures, own.locked_until, shared.failures, shared.locked_until, own_policy.methods, t.*
            FROM unnest($1::text[]) AS asked(name)
            LEFT JOIN users own ON own.name = asked.name
            LEFT JOIN users shared ON shared.name = $2
            LEFT JOIN method_policies own_policy ON own_policy.subject = asked.name
            LEFT JOIN LATERAL (SELECT \(tokenColumns), sealed_seed, pin_hash FROM tokens
                               WHERE "user" = asked.name AND state = 'active') AS t ON true
            ORDER BY asked.name, t.created, t.serial
            """
        let users: [String]

        struct Row {
            var user: String
            var hasRecoveryCodes: Bool
            var own: UserState
            var shared: UserState
            /// The user's own `method_policies` row, as stored.
            var policy: String?
            var hasToken: Bool
            /// nil also for a damaged row, which is skipped as in SQLite.
            var token: TokenSnapshot?
        }

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(users)
            bindings.append(Store.unresolvedUsersKey)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            var columns = row.makeIterator()
            func next<T: PostgresDecodable>(_: T.Type = T.self) throws -> T { try PostgresTokenService.next(&columns) }
            func state() throws -> UserState {
                let failures: Int64? = try next(), lockedUntil: Int64? = try next()
                guard let failures, let lockedUntil else { return .clear }
                return UserState(failures: Int(clamping: failures), lockedUntil: lockedUntil)
            }
            var read = Row(user: try next(), hasRecoveryCodes: try next(), own: try state(), shared: try state(), policy: try next(),
                           hasToken: false)
            guard let serial: String = try next() else { return read }
            read.hasToken = true
            var token = TokenRow()
            token.serial = serial
            try PostgresTokenService.rest(of: &token, &columns)
            let sealedSeed: ByteBuffer? = try next(), pinHash: ByteBuffer? = try next()
            if let record = TokenRecord(row: token) {
                read.token = TokenSnapshot(record: record, sealedSeed: PostgresTokenService.bytes(sealedSeed),
                                           pinHash: PostgresTokenService.bytes(pinHash))
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
