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

    /// What verifications of token codes decide on, read in one statement (one snapshot) for
    /// several users: each user's active tokens and failure row — or, for a name the store
    /// knows nothing of, the failure row unknown names share, returned as the failure key (as
    /// `lockUser` does). Keyed by user name.
    func verificationReads(users: [String], _ connection: PostgresConnection) async throws
        -> [String: (snapshot: VerifySnapshot, failureKey: String?)] {
        struct Collected { var known = false, own = UserState.clear, shared = UserState.clear, tokens: [TokenSnapshot] = [] }
        var collected: [String: Collected] = [:]
        for try await row in try await connection.execute(VerificationRead(users: users), logger: logger) {
            var entry = collected[row.user] ?? Collected()
            entry.known = entry.known || row.hasRecoveryCodes || row.hasToken
            entry.own = row.own
            entry.shared = row.shared
            if let token = row.token { entry.tokens.append(token) }
            collected[row.user] = entry
        }
        return collected.mapValues { entry in
            entry.known ? (VerifySnapshot(failures: entry.own, tokens: entry.tokens), nil)
                : (VerifySnapshot(failures: entry.shared), Store.unresolvedUsersKey)
        }
    }

    /// Per user asked about, one row per active token (a row of NULL token columns when there
    /// is none), each with the failure rows and whether unused recovery codes exist. Decoded
    /// by position: the columns are fixed here, and a row is decoded per verification.
    struct VerificationRead: PostgresPreparedStatement {
        static let sql = """
            SELECT asked.name, EXISTS (SELECT 1 FROM recovery_codes WHERE "user" = asked.name AND used = 0),
                   own.failures, own.locked_until, shared.failures, shared.locked_until, t.*
            FROM unnest($1::text[]) AS asked(name)
            LEFT JOIN users own ON own.name = asked.name
            LEFT JOIN users shared ON shared.name = $2
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
            func next<T: PostgresDecodable>(_: T.Type = T.self) throws -> T {
                guard let cell = columns.next() else { throw StoreError(.database, "a verification read returned too few columns") }
                return try cell.decode(T.self)
            }
            func state() throws -> UserState {
                let failures: Int64? = try next(), lockedUntil: Int64? = try next()
                guard let failures, let lockedUntil else { return .clear }
                return UserState(failures: Int(clamping: failures), lockedUntil: lockedUntil)
            }
            var read = Row(user: try next(), hasRecoveryCodes: try next(), own: try state(), shared: try state(), hasToken: false)
            guard let serial: String = try next() else { return read }
            read.hasToken = true
            var token = TokenRow()
            token.serial = serial
            token.user = try next()
            token.kind = try next()
            token.algorithm = try next()
            token.digits = try next()
            token.period = try next()
            token.counter = try next()
            token.lastStep = try next()
            token.nickname = try next()
            token.issuer = try next()
            token.state = try next()
            token.created = try next()
            token.lastUsed = try next()
            token.pinMode = try next()
            token.hasPIN = try next()
            token.pinLength = try next()
            token.pinChangeRequired = try next()
            token.expires = try next()
            token.drift = try next()
            token.source = try next()
            token.suite = try next()
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
