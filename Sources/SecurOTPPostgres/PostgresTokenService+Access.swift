import PostgresNIO
import SecurOTPService
import SecurOTPStore

/// Credentials and the audit log.
extension PostgresTokenService {
    static let credentialColumns = "id, kind, name, secret_hash, users, groups, offline_codes, created, revoked, last_used"

    static func credential(_ row: PostgresRow) throws -> CredentialRecord? {
        let (id, kind, name, hash, users, groups, offline, created, revoked, lastUsed) =
            try row.decode((String, String, String, ByteBuffer, String, String, Int64, Int64, Int64, Int64).self)
        guard let kind = CredentialKind(rawValue: kind) else { return nil }
        return CredentialRecord(id: id, kind: kind, name: name, secretHash: Array(hash.readableBytesView),
                                users: users.split(separator: ",").map(String.init), groups: groups.split(separator: ",").map(String.init),
                                offlineCodes: Int(clamping: offline), created: created, revoked: revoked, lastUsed: lastUsed)
    }

    /// Every request's first query, prepared once per connection.
    struct CredentialByID: PostgresPreparedStatement {
        static let sql = "SELECT \(credentialColumns) FROM credentials WHERE id = $1"
        typealias Row = CredentialRecord?
        let id: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(id)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> CredentialRecord? { try PostgresTokenService.credential(row) }
    }

    public func addCredential(kind: CredentialKind, _ request: CredentialRequest, caller: Caller) async throws(ServiceError) -> CredentialCreated {
        let (record, credential) = try AccessRules.newCredential(kind: kind, request, now: self.now())
        try await transaction("adding a \(kind.rawValue) credential") { connection in
            for try await _ in try await connection.query(
                "SELECT 1 FROM credentials WHERE kind = \(kind.rawValue) AND name = \(record.name) AND revoked = 0", logger: self.logger) {
                throw AccessRules.duplicate(kind, record.name)
            }
            try await connection.query("""
                INSERT INTO credentials (id, kind, name, secret_hash, users, groups, offline_codes, created)
                VALUES (\(record.id), \(kind.rawValue), \(record.name), \(Self.bytea(record.secretHash)), \(record.users.joined(separator: ",")),
                        \(record.groups.joined(separator: ",")), \(Int64(record.offlineCodes)), \(record.created))
                """, logger: self.logger)
            try await self.append(AuditEntry(caller, "\(kind.rawValue) add", user: "", detail: record.name, time: record.created), connection)
        }
        return CredentialCreated(name: record.name, kind: kind.rawValue, credential: credential.text)
    }

    public func credentials(kind: CredentialKind, caller: Caller) async throws(ServiceError) -> CredentialList {
        try await run("listing credentials") { connection in
            var records: [CredentialInfo] = []
            for try await row in try await connection.query(
                "SELECT \(unescaped: Self.credentialColumns) FROM credentials WHERE kind = \(kind.rawValue) ORDER BY revoked <> 0, name, created",
                logger: self.logger) {
                if let record = try Self.credential(row) { records.append(record.info) }
            }
            return CredentialList(credentials: records)
        }
    }

    public func revokeCredential(kind: CredentialKind, name: String, caller: Caller) async throws(ServiceError) {
        try await transaction("revoking a \(kind.rawValue) credential") { connection in
            let now = self.now()
            var revoked = 0
            for try await _ in try await connection.query(
                "UPDATE credentials SET revoked = \(now) WHERE kind = \(kind.rawValue) AND name = \(name) AND revoked = 0 RETURNING 1",
                logger: self.logger) { revoked += 1 }
            guard revoked > 0 else {
                throw ServiceError(.notFound, "no \(kind.rawValue) named \(name) has a credential in force; see: securotp \(kind.rawValue) list")
            }
            try await self.append(AuditEntry(caller, "\(kind.rawValue) revoke", user: "", detail: name, time: now), connection)
        }
        credentialCache.forget(kind: kind, name: name)
    }

    public func authenticate(credential text: String, address: String) async throws(ServiceError) -> Caller {
        guard let credential = Credential(text: text) else { throw AccessRules.refused }
        let now = self.now()
        var record = credentialCache.record(id: credential.id, now: now)
        if record == nil {
            record = try await run("checking a credential") { connection -> CredentialRecord? in
                for try await record in try await connection.execute(CredentialByID(id: credential.id), logger: self.logger) {
                    return record
                }
                return nil
            }
            if let record { credentialCache.keep(record, now: now) }
        }
        guard let record, let caller = AccessRules.caller(for: record, presented: credential, address: address) else { throw AccessRules.refused }
        if lastTouch.due(record.id, now: now) {
            _ = try? await run("recording a credential's use") { connection in
                try await connection.query("UPDATE credentials SET last_used = \(now) WHERE id = \(record.id)", logger: self.logger)
            }
        }
        return caller
    }

    public func audit(user: String?, limit: Int, caller: Caller) async throws(ServiceError) -> AuditList {
        let limit = Int64(min(max(limit, 1), 10_000))
        return try await run("reading the audit log") { connection in
            let rows = if let user {
                try await connection.query("""
                    SELECT id, time, actor_kind, actor, address, action, "user", serial, result, detail FROM audit
                    WHERE "user" = \(user) ORDER BY id DESC LIMIT \(limit)
                    """, logger: self.logger)
            } else {
                try await connection.query("""
                    SELECT id, time, actor_kind, actor, address, action, "user", serial, result, detail FROM audit ORDER BY id DESC LIMIT \(limit)
                    """, logger: self.logger)
            }
            var entries: [AuditEntry] = []
            for try await (id, time, actorKind, actor, address, action, user, serial, result, detail) in
                rows.decode((Int64, Int64, String, String, String, String, String, String, String, String).self) {
                entries.append(AuditEntry(id: id, time: time, actorKind: actorKind, actor: actor, address: address, action: action,
                                          user: user, serial: serial, result: result, detail: detail))
            }
            return AuditList(entries: entries)
        }
    }

    public func record(_ entry: AuditEntry) async {
        _ = try? await run("writing the audit log") { connection in try await self.append(entry, connection) }
    }

    public func pruneAudit(before time: Int64) async throws(ServiceError) -> Int {
        try await run("pruning the audit log") { connection in
            var removed = 0
            for try await _ in try await connection.query("DELETE FROM audit WHERE time < \(time) RETURNING 1", logger: self.logger) { removed += 1 }
            return removed
        }
    }
}
