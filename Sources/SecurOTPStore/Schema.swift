import SecurOTPCore

/// Schema versions, kept in SQLite's `user_version`. Each migration moves the database one
/// version up inside one transaction; a database newer than this build is refused.
enum Schema {
    static let migrations: [String] = [
        // 1: users (failure counter and lock) and tokens (sealed seeds, exactly-once state).
        """
        CREATE TABLE users (
            name TEXT PRIMARY KEY NOT NULL,
            failures INTEGER NOT NULL DEFAULT 0,
            locked_until INTEGER NOT NULL DEFAULT 0,
            last_failure INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE TABLE tokens (
            serial TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            kind TEXT NOT NULL,
            algorithm TEXT NOT NULL,
            digits INTEGER NOT NULL,
            period INTEGER NOT NULL,
            counter INTEGER NOT NULL DEFAULT 0,
            last_step INTEGER NOT NULL DEFAULT -1,
            sealed_seed BLOB NOT NULL,
            nickname TEXT NOT NULL DEFAULT '',
            issuer TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'active',
            created INTEGER NOT NULL,
            last_used INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX tokens_by_user ON tokens(user);
        """,
        // 2: imported token kinds (SecurID), PINs (slow hashes only), expiry, drift, recovery codes.
        """
        ALTER TABLE tokens ADD COLUMN pin_mode TEXT NOT NULL DEFAULT 'none';
        ALTER TABLE tokens ADD COLUMN pin_hash BLOB;
        ALTER TABLE tokens ADD COLUMN pin_length INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tokens ADD COLUMN pin_change_required INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tokens ADD COLUMN expires INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tokens ADD COLUMN drift INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE tokens ADD COLUMN source TEXT NOT NULL DEFAULT 'enroll';
        CREATE TABLE recovery_codes (
            user TEXT NOT NULL,
            id TEXT NOT NULL,
            hash BLOB NOT NULL,
            created INTEGER NOT NULL,
            used INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (user, id)
        ) WITHOUT ROWID;
        CREATE TABLE wal_restart (writes INTEGER NOT NULL);
        INSERT INTO wal_restart VALUES (0);
        """,
        // 3: OCRA (RFC 6287) challenge-response tokens keep their suite.
        """
        ALTER TABLE tokens ADD COLUMN suite TEXT NOT NULL DEFAULT '';
        """,
        // 4: the validator daemon: credentials of hosts and admins (hashes only), the audit log,
        // pending challenges of host dialogues, and HOTP codes handed to hosts for offline use.
        """
        CREATE TABLE credentials (
            id TEXT PRIMARY KEY NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            secret_hash BLOB NOT NULL,
            users TEXT NOT NULL DEFAULT '',
            groups TEXT NOT NULL DEFAULT '',
            offline_codes INTEGER NOT NULL DEFAULT 0,
            created INTEGER NOT NULL,
            revoked INTEGER NOT NULL DEFAULT 0,
            last_used INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX credentials_active_name ON credentials(kind, name) WHERE revoked = 0;
        CREATE TABLE audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            time INTEGER NOT NULL,
            actor_kind TEXT NOT NULL,
            actor TEXT NOT NULL,
            address TEXT NOT NULL,
            action TEXT NOT NULL,
            user TEXT NOT NULL DEFAULT '',
            serial TEXT NOT NULL DEFAULT '',
            result TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX audit_by_user ON audit(user, id);
        CREATE INDEX audit_by_time ON audit(time);
        CREATE TABLE challenges (
            id TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            host TEXT NOT NULL,
            kind TEXT NOT NULL,
            serial TEXT NOT NULL,
            position INTEGER NOT NULL DEFAULT 0,
            pin_mode TEXT NOT NULL DEFAULT 'none',
            remaining INTEGER NOT NULL DEFAULT 0,
            expires INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE offline_grants (
            host TEXT NOT NULL,
            serial TEXT NOT NULL,
            user TEXT NOT NULL,
            first INTEGER NOT NULL,
            last INTEGER NOT NULL,
            PRIMARY KEY (host, serial)
        ) WITHOUT ROWID;
        """,
        // 5: push approval (docs/push.md): users' devices (public keys, hashes of their one-time
        // codes and credentials), push requests with their approvals, and per-user push state
        // (blocked by `deny --fraud`, requests since the last success for `push_limit`).
        """
        CREATE TABLE devices (
            id TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            aaid TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'pending',
            activation_hash BLOB,
            activation_expires INTEGER NOT NULL DEFAULT 0,
            public_key BLOB,
            certificate TEXT NOT NULL DEFAULT '',
            credential_hash BLOB,
            sign_counter INTEGER NOT NULL DEFAULT 0,
            user_verification INTEGER NOT NULL DEFAULT 0,
            unlock_hash BLOB,
            unlock_expires INTEGER NOT NULL DEFAULT 0,
            created INTEGER NOT NULL,
            last_used INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE INDEX devices_by_user ON devices(user);
        CREATE UNIQUE INDEX devices_by_activation ON devices(activation_hash) WHERE activation_hash IS NOT NULL;
        CREATE TABLE push_requests (
            id TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            host TEXT NOT NULL,
            service TEXT NOT NULL DEFAULT '',
            remote_address TEXT NOT NULL DEFAULT '',
            tty TEXT NOT NULL DEFAULT '',
            command TEXT NOT NULL DEFAULT '',
            nonce TEXT NOT NULL,
            number TEXT NOT NULL,
            created INTEGER NOT NULL,
            expires INTEGER NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',
            wrong_numbers INTEGER NOT NULL DEFAULT 0,
            device TEXT NOT NULL DEFAULT '',
            authenticator_data BLOB,
            client_data_json BLOB,
            signature BLOB,
            result TEXT NOT NULL DEFAULT ''
        ) WITHOUT ROWID;
        CREATE INDEX push_requests_by_user ON push_requests(user, state);
        CREATE INDEX push_requests_by_expiry ON push_requests(expires);
        CREATE TABLE push_users (
            user TEXT PRIMARY KEY NOT NULL,
            blocked INTEGER NOT NULL DEFAULT 0,
            since_success INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        """,
        // 6: offline approval (docs/push.md, "Offline approval"): each device's offline secret,
        // sealed under the data key; empty for devices activated before it.
        """
        ALTER TABLE devices ADD COLUMN offline_secret BLOB;
        """,
        // 7: phones without an app (docs/push.md, issue 16): a web device's enrollment challenge
        // while pending (single use), then its passkey's credential id and origin; the page's
        // session challenges and sessions (`web_sessions`, hashed, each taken once).
        """
        CREATE TABLE web_devices (
            device TEXT PRIMARY KEY NOT NULL,
            challenge BLOB,
            challenge_expires INTEGER NOT NULL DEFAULT 0,
            credential_id BLOB,
            origin TEXT NOT NULL DEFAULT ''
        ) WITHOUT ROWID;
        CREATE TABLE web_sessions (
            hash BLOB PRIMARY KEY NOT NULL,
            kind TEXT NOT NULL,
            device TEXT NOT NULL DEFAULT '',
            expires INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 8: login methods per user and per group (`securotp policy`, LoginMethods): `subject`
        // is a user name or `@` and a group name; `methods` the order, `fido,otp`.
        """
        CREATE TABLE method_policies (
            subject TEXT PRIMARY KEY NOT NULL,
            methods TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
        // 9: a passkey's credential id is registered once, for one device (WebAuthn: the RP
        // refuses a registration whose credential id is already registered). NULL (pending
        // devices) repeats freely. A database holding a repeated id is refused before this
        // runs (`refuseRepeatedCredentialIDs`), never cleaned up silently.
        """
        CREATE UNIQUE INDEX web_devices_by_credential ON web_devices(credential_id);
        """,
        // 10: limits are rates (issue 25; docs/push.md, "Limits are rates"). `counted_until`:
        // when the requests counted against `push_limit` will have decayed (PushRate);
        // `since_success`, the count it replaces, is no longer read. A request's context
        // (remote address, tty, sudo's command line) lives only while the request is pending:
        // the trigger blanks it as the request leaves `pending`, whatever moves it, and the
        // sweep (PushUpkeep) ends pending requests past their expiry, found by the partial index.
        """
        ALTER TABLE push_users ADD COLUMN counted_until INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX push_requests_pending ON push_requests(expires) WHERE state = 'pending';
        CREATE TRIGGER push_requests_context_ends AFTER UPDATE OF state ON push_requests
        WHEN NEW.state <> 'pending' AND (NEW.remote_address <> '' OR NEW.tty <> '' OR NEW.command <> '')
        BEGIN
            UPDATE push_requests SET remote_address = '', tty = '', command = '' WHERE id = NEW.id;
        END;
        UPDATE push_requests SET remote_address = '', tty = '', command = ''
        WHERE state <> 'pending' AND (remote_address <> '' OR tty <> '' OR command <> '');
        """,
    ]

    static var currentVersion: Int64 { Int64(migrations.count) }

    static func migrate(_ db: SQLiteDatabase) throws(StoreError) {
        try refuseRepeatedCredentialIDs(db)
        try db.migrate(migrations, program: "securotp")
    }

    /// Web devices made before schema 9 may share a credential id (only an attacker's
    /// hand-made registration or one passkey enrolled twice does that). Which one is genuine
    /// is the admin's call, so the upgrade stops, names them and says how to go on; nothing is
    /// changed. (A repeat added between this check and the migration fails the index instead.)
    static func refuseRepeatedCredentialIDs(_ db: SQLiteDatabase) throws(StoreError) {
        let version = try db.userVersion()
        guard version >= 7, version < 9 else { return }
        let statement = try db.prepare("""
            SELECT w.device, coalesce(d.user, ''), w.credential_id FROM web_devices w LEFT JOIN devices d ON d.id = w.device
            WHERE w.credential_id IN (SELECT credential_id FROM web_devices WHERE credential_id IS NOT NULL GROUP BY credential_id HAVING count(*) > 1)
            ORDER BY w.credential_id, coalesce(d.created, 0), w.device LIMIT 20
            """)
        defer { statement.reset() }
        var shown: [String] = []
        var later: [String] = [] // all but the oldest of each credential id
        var previousID: [UInt8]?
        while try statement.step() {
            let device = statement.text(0)
            let credentialID = statement.blob(2)
            shown.append("\(TerminalText.quoted(device)) of \(TerminalText.quoted(statement.text(1)))")
            if credentialID == previousID { later.append("'" + TerminalText.bounded(TerminalText.escaped(device), maxBytes: 64).split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'") }
            previousID = credentialID
        }
        guard !shown.isEmpty else { return }
        throw StoreError(.corrupt, """
            database \(db.path): web devices \(shown.joined(separator: ", ")) share a passkey credential id (listed oldest first per id); \
            this version refuses a credential id registered twice (schema 9) and changed nothing. Keep the genuine one (normally the \
            oldest) and unlink the others with the previous version's database: sqlite3 \(TerminalText.quoted(db.path)) \
            "UPDATE web_devices SET credential_id = NULL WHERE device IN (\(later.joined(separator: ",")))" (all but the oldest of each id: adjust it), \
            then start this version again and remove them: securotp device remove USER DEVICE (docs/push.md)
            """)
    }
}
