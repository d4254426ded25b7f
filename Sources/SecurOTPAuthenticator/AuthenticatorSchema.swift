import SecurOTPStore

/// The authenticator database's tables, versioned in SQLite's `user_version`. A database newer
/// than this build is refused rather than misread.
enum AuthenticatorSchema {
    static let migrations: [String] = [
        // 1: the store's owner and key check, and the tokens with their sealed seeds.
        """
        CREATE TABLE store (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            uid INTEGER NOT NULL,
            machine_tag TEXT NOT NULL,
            key_check BLOB NOT NULL,
            created INTEGER NOT NULL
        );
        CREATE TABLE tokens (
            serial TEXT PRIMARY KEY NOT NULL,
            kind TEXT NOT NULL,
            algorithm TEXT NOT NULL,
            digits INTEGER NOT NULL,
            period INTEGER NOT NULL,
            counter INTEGER NOT NULL DEFAULT 0,
            pin_mode TEXT NOT NULL,
            expires INTEGER NOT NULL DEFAULT 0,
            nickname TEXT NOT NULL DEFAULT '',
            issuer TEXT NOT NULL DEFAULT '',
            account TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL,
            created INTEGER NOT NULL,
            sealed_seed BLOB NOT NULL
        );
        """,
        // 2: the push device registration (docs/push.md, "Enrolling a device"): one per store.
        // The private key (PKCS#8 PEM) and the device credential are sealed like seeds; the PIN
        // is only a SlowHash record.
        """
        CREATE TABLE device (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            device TEXT NOT NULL,
            user TEXT NOT NULL,
            server TEXT NOT NULL,
            ca_file TEXT NOT NULL DEFAULT '',
            public_key BLOB NOT NULL,
            sealed_private_key BLOB NOT NULL,
            sealed_credential BLOB NOT NULL,
            counter INTEGER NOT NULL DEFAULT 0,
            pin_required INTEGER NOT NULL,
            pin_min_length INTEGER NOT NULL,
            pin_max_length INTEGER NOT NULL,
            pin_hash TEXT NOT NULL DEFAULT '',
            pin_failures INTEGER NOT NULL DEFAULT 0,
            blocked INTEGER NOT NULL DEFAULT 0,
            created INTEGER NOT NULL
        );
        """,
        // 3: offline approval (docs/push.md, "Offline approval"): the offline secret the validator
        // issued at activation, sealed like the key; empty for devices activated before it.
        """
        ALTER TABLE device ADD COLUMN sealed_offline_secret BLOB;
        """,
    ]

    static var currentVersion: Int64 { Int64(migrations.count) }

    static func migrate(_ db: SQLiteDatabase) throws(StoreError) { try db.migrate(migrations, program: "securotp-authenticator") }
}
