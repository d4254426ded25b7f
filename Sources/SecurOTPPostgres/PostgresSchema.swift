import Logging
import PostgresNIO

/// The PostgreSQL schema: the same tables as the SQLite store (schema 4), with PostgreSQL's
/// types, and the function that applies a verification's writes. Versions are kept in
/// `securotp_schema`; migrations run in one transaction under an advisory lock, so nodes
/// starting together migrate once; a newer database is refused.
enum PostgresSchema {
    /// A fixed advisory-lock key for migrations (any 64-bit value no other lock uses).
    static let migrationLock: Int64 = 0x5EC0_7A11_0000_0001

    /// Each migration is a list of statements: the extended protocol takes one per query.
    static let migrations: [[String]] = [
        // 1: everything the SQLite store holds at its schema 4.
        statements("""
        CREATE TABLE users (
            name TEXT PRIMARY KEY,
            failures BIGINT NOT NULL DEFAULT 0,
            locked_until BIGINT NOT NULL DEFAULT 0,
            last_failure BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE tokens (
            serial TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            kind TEXT NOT NULL,
            algorithm TEXT NOT NULL,
            digits BIGINT NOT NULL,
            period BIGINT NOT NULL,
            counter BIGINT NOT NULL DEFAULT 0,
            last_step BIGINT NOT NULL DEFAULT -1,
            sealed_seed BYTEA NOT NULL,
            nickname TEXT NOT NULL DEFAULT '',
            issuer TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'active',
            created BIGINT NOT NULL,
            last_used BIGINT NOT NULL DEFAULT 0,
            pin_mode TEXT NOT NULL DEFAULT 'none',
            pin_hash BYTEA,
            pin_length BIGINT NOT NULL DEFAULT 0,
            pin_change_required BOOLEAN NOT NULL DEFAULT false,
            expires BIGINT NOT NULL DEFAULT 0,
            drift BIGINT NOT NULL DEFAULT 0,
            source TEXT NOT NULL DEFAULT 'enroll',
            suite TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX tokens_by_user ON tokens ("user", created, serial);
        CREATE TABLE recovery_codes (
            "user" TEXT NOT NULL,
            id TEXT NOT NULL,
            hash BYTEA NOT NULL,
            created BIGINT NOT NULL,
            used BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY ("user", id)
        );
        CREATE TABLE credentials (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            secret_hash BYTEA NOT NULL,
            users TEXT NOT NULL DEFAULT '',
            groups TEXT NOT NULL DEFAULT '',
            offline_codes BIGINT NOT NULL DEFAULT 0,
            created BIGINT NOT NULL,
            revoked BIGINT NOT NULL DEFAULT 0,
            last_used BIGINT NOT NULL DEFAULT 0
        );
        CREATE UNIQUE INDEX credentials_active_name ON credentials (kind, name) WHERE revoked = 0;
        CREATE TABLE audit (
            id BIGSERIAL PRIMARY KEY,
            time BIGINT NOT NULL,
            actor_kind TEXT NOT NULL,
            actor TEXT NOT NULL,
            address TEXT NOT NULL,
            action TEXT NOT NULL,
            "user" TEXT NOT NULL DEFAULT '',
            serial TEXT NOT NULL DEFAULT '',
            result TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX audit_by_user ON audit ("user", id);
        CREATE INDEX audit_by_time ON audit (time);
        CREATE TABLE challenges (
            id TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            kind TEXT NOT NULL,
            serial TEXT NOT NULL,
            position BIGINT NOT NULL DEFAULT 0,
            pin_mode TEXT NOT NULL DEFAULT 'none',
            remaining BIGINT NOT NULL DEFAULT 0,
            expires BIGINT NOT NULL
        );
        CREATE INDEX challenges_by_expiry ON challenges (expires);
        CREATE TABLE offline_grants (
            host TEXT NOT NULL,
            serial TEXT NOT NULL,
            "user" TEXT NOT NULL,
            first BIGINT NOT NULL,
            last BIGINT NOT NULL,
            PRIMARY KEY (host, serial)
        );
        """),
        // 2: one round trip for all of a verification's writes (PostgresWrites.swift).
        [PostgresWrites.function],
        // 3: several verifications' writes per call, committed before it answers (PostgresWrites.swift).
        [PostgresWrites.committedProcedure],
        // 4: push approval, as the SQLite store's schema 5 (docs/push.md).
        statements("""
        CREATE TABLE devices (
            id TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            aaid TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'pending',
            activation_hash BYTEA,
            activation_expires BIGINT NOT NULL DEFAULT 0,
            public_key BYTEA,
            certificate TEXT NOT NULL DEFAULT '',
            credential_hash BYTEA,
            sign_counter BIGINT NOT NULL DEFAULT 0,
            user_verification BOOLEAN NOT NULL DEFAULT false,
            unlock_hash BYTEA,
            unlock_expires BIGINT NOT NULL DEFAULT 0,
            created BIGINT NOT NULL,
            last_used BIGINT NOT NULL DEFAULT 0
        );
        CREATE INDEX devices_by_user ON devices ("user");
        CREATE UNIQUE INDEX devices_by_activation ON devices (activation_hash) WHERE activation_hash IS NOT NULL;
        CREATE TABLE push_requests (
            id TEXT PRIMARY KEY,
            "user" TEXT NOT NULL,
            host TEXT NOT NULL,
            service TEXT NOT NULL DEFAULT '',
            remote_address TEXT NOT NULL DEFAULT '',
            tty TEXT NOT NULL DEFAULT '',
            command TEXT NOT NULL DEFAULT '',
            nonce TEXT NOT NULL,
            number TEXT NOT NULL,
            created BIGINT NOT NULL,
            expires BIGINT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',
            wrong_numbers BIGINT NOT NULL DEFAULT 0,
            device TEXT NOT NULL DEFAULT '',
            authenticator_data BYTEA,
            client_data_json BYTEA,
            signature BYTEA,
            result TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX push_requests_by_user ON push_requests ("user", state);
        CREATE INDEX push_requests_by_expiry ON push_requests (expires);
        CREATE TABLE push_users (
            "user" TEXT PRIMARY KEY,
            blocked BOOLEAN NOT NULL DEFAULT false,
            since_success BIGINT NOT NULL DEFAULT 0
        );
        """),
        // 5: offline approval, as the SQLite store's schema 6 (docs/push.md, "Offline approval").
        ["ALTER TABLE devices ADD COLUMN offline_secret BYTEA"],
        // 6: phones without an app, as the SQLite store's schema 7 (docs/push.md).
        statements("""
        CREATE TABLE web_devices (
            device TEXT PRIMARY KEY,
            challenge BYTEA,
            challenge_expires BIGINT NOT NULL DEFAULT 0,
            credential_id BYTEA,
            origin TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE web_sessions (
            hash BYTEA PRIMARY KEY,
            kind TEXT NOT NULL,
            device TEXT NOT NULL DEFAULT '',
            expires BIGINT NOT NULL
        );
        """),
        // 7: a passkey's credential id is registered once, as the SQLite store's schema 9. A
        // database holding a repeated id is refused with the devices named, nothing changed.
        ["""
        DO $$
        DECLARE repeated TEXT;
        BEGIN
            SELECT string_agg(quote_literal(w.device) || ' of ' || quote_literal(coalesce(d."user", '')), ', '
                              ORDER BY w.credential_id, d.created, w.device)
            INTO repeated
            FROM web_devices w LEFT JOIN devices d ON d.id = w.device
            WHERE w.credential_id IN (SELECT credential_id FROM web_devices WHERE credential_id IS NOT NULL
                                      GROUP BY credential_id HAVING count(*) > 1);
            IF repeated IS NOT NULL THEN
                RAISE EXCEPTION 'web devices % share a passkey credential id (oldest first per id); this securotpd refuses a credential id registered twice (schema 7) and changed nothing. Keep the genuine one (normally the oldest), run UPDATE web_devices SET credential_id = NULL WHERE device IN (...the others...) with the previous securotpd''s database, start this one again and remove them: securotp device remove USER DEVICE', left(repeated, 2000);
            END IF;
        END $$
        """, "CREATE UNIQUE INDEX web_devices_by_credential ON web_devices (credential_id)"],
        // 8: login methods per user and per group, as
        // the SQLite store's schema 8 (`securotp policy`, docs/configuration.md "Login methods").
        ["""
        CREATE TABLE IF NOT EXISTS method_policies (
            subject TEXT PRIMARY KEY,
            methods TEXT NOT NULL
        )
        """],
        // 9: limits are rates, as the SQLite store's schema 10 (issue 25; docs/push.md, "Limits
        // are rates"): `counted_until` (PushRate) replaces the latch `since_success` (no longer
        // read); a request's context is blanked as it leaves `pending` (a BEFORE trigger, so the
        // statement that moves it, on any node, stores no context), and pending requests past
        // their expiry are found by the partial index for the sweep (PushUpkeep).
        ["ALTER TABLE push_users ADD COLUMN counted_until BIGINT NOT NULL DEFAULT 0",
         "CREATE INDEX push_requests_pending ON push_requests (expires) WHERE state = 'pending'",
         """
         CREATE FUNCTION securotp_push_context_ends() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF NEW.state <> 'pending' THEN
                 NEW.remote_address := '';
                 NEW.tty := '';
                 NEW.command := '';
             END IF;
             RETURN NEW;
         END $$
         """,
         """
         CREATE TRIGGER push_requests_context_ends BEFORE UPDATE OF state ON push_requests
         FOR EACH ROW EXECUTE FUNCTION securotp_push_context_ends()
         """,
         """
         UPDATE push_requests SET remote_address = '', tty = '', command = ''
         WHERE state <> 'pending' AND (remote_address <> '' OR tty <> '' OR command <> '')
         """],
    ]

    private static func statements(_ script: String) -> [String] {
        script.split(separator: ";").filter { !$0.allSatisfy(\.isWhitespace) }.map(String.init)
    }

    static var currentVersion: Int { migrations.count }

    /// Brings the database to `currentVersion`; refuses one newer than this build.
    static func migrate(_ client: PostgresClient, logger: Logger) async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS securotp_schema (version INTEGER NOT NULL)", logger: logger)
            var version = 0
            for try await (value) in try await connection.query("SELECT max(version) FROM securotp_schema", logger: logger).decode(Int?.self) {
                version = value ?? 0
            }
            // Read from the database: outside the known versions it fails closed, never indexes
            // the migrations with it.
            guard version >= 0 else { throw PostgresSchemaError.invalid(version) }
            guard version <= currentVersion else {
                throw PostgresSchemaError.tooNew(version, currentVersion)
            }
            for index in version..<currentVersion {
                for statement in migrations[index] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO securotp_schema (version) VALUES (\(index + 1))", logger: logger)
            }
        }
    }
}

enum PostgresSchemaError: Error, CustomStringConvertible {
    case tooNew(Int, Int)
    case invalid(Int)

    var description: String {
        switch self {
        case .tooNew(let found, let supported):
            "the PostgreSQL database has securotp schema \(found), newer than this securotpd (\(supported)); upgrade securotpd"
        case .invalid(let found):
            "the PostgreSQL database has securotp schema \(found), which no securotpd makes; restore it from backup"
        }
    }
}
