import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Every write a verification makes, in one round trip: the engine's StateWrites, the
/// challenge it may start and its audit entry go to `securotp_apply` as one JSON document and
/// are applied in order inside one statement. A conditional write that changes no row raises
/// SQLSTATE `SOTP1` with the write's index, so the statement — and the transaction around it,
/// if any — rolls back, and the caller reports that write's conflict (StateWrite's contract).
/// One statement is atomic without a transaction: that is what lets a verification run as a
/// read and a write with no BEGIN, lock or COMMIT around them.
enum PostgresWrites {
    static let conflictState = "SOTP1"

    /// Installed by schema migration 2.
    static let function = """
        CREATE FUNCTION securotp_apply(document jsonb) RETURNS bigint LANGUAGE plpgsql AS $$
        DECLARE
            op jsonb;
            applied bigint := 0;
            changed bigint;
        BEGIN
            FOR op IN SELECT value FROM jsonb_array_elements(document->'ops') LOOP
                CASE op->>'op'
                WHEN 'advance_step' THEN
                    UPDATE tokens SET last_step = (op->>'to')::bigint, last_used = (op->>'last_used')::bigint, drift = (op->>'drift')::bigint
                    WHERE serial = op->>'serial' AND last_step = (op->>'from')::bigint AND (op->>'to')::bigint > (op->>'from')::bigint;
                WHEN 'advance_counter' THEN
                    UPDATE tokens SET counter = (op->>'to')::bigint, last_used = (op->>'last_used')::bigint
                    WHERE serial = op->>'serial' AND counter = (op->>'from')::bigint AND (op->>'to')::bigint > (op->>'from')::bigint;
                WHEN 'mark_used' THEN
                    UPDATE tokens SET last_used = (op->>'last_used')::bigint WHERE serial = op->>'serial';
                WHEN 'spend_recovery_code' THEN
                    UPDATE recovery_codes SET used = (op->>'used_at')::bigint
                    WHERE "user" = op->>'user' AND id = op->>'id' AND used = 0;
                WHEN 'set_failures' THEN
                    IF (op->>'expected_failures')::bigint = 0 AND (op->>'expected_locked_until')::bigint = 0 THEN
                        INSERT INTO users (name, failures, locked_until, last_failure)
                        VALUES (op->>'key', (op->>'failures')::bigint, (op->>'locked_until')::bigint, (op->>'at')::bigint)
                        ON CONFLICT (name) DO UPDATE SET failures = EXCLUDED.failures, locked_until = EXCLUDED.locked_until,
                            last_failure = EXCLUDED.last_failure
                        WHERE users.failures = 0 AND users.locked_until = 0;
                    ELSE
                        UPDATE users SET failures = (op->>'failures')::bigint, locked_until = (op->>'locked_until')::bigint,
                            last_failure = (op->>'at')::bigint
                        WHERE name = op->>'key' AND failures = (op->>'expected_failures')::bigint
                            AND locked_until = (op->>'expected_locked_until')::bigint;
                    END IF;
                WHEN 'clear_failures' THEN
                    DELETE FROM users WHERE name = op->>'key' AND failures = (op->>'expected_failures')::bigint
                        AND locked_until = (op->>'expected_locked_until')::bigint;
                WHEN 'set_pin' THEN
                    UPDATE tokens SET pin_mode = op->>'mode', pin_hash = decode(op->>'hash', 'hex'), pin_length = (op->>'length')::bigint,
                        pin_change_required = false
                    WHERE "user" = op->>'user' AND serial = op->>'serial';
                WHEN 'clear_pin' THEN
                    UPDATE tokens SET pin_mode = 'none', pin_hash = NULL, pin_length = 0, pin_change_required = false
                    WHERE "user" = op->>'user' AND serial = op->>'serial';
                WHEN 'require_pin' THEN
                    UPDATE tokens SET pin_mode = op->>'mode', pin_change_required = true WHERE "user" = op->>'user' AND serial = op->>'serial';
                WHEN 'challenge' THEN
                    DELETE FROM challenges WHERE expires <= (op->>'prune_before')::bigint;
                    INSERT INTO challenges (id, "user", host, kind, serial, position, pin_mode, remaining, expires)
                    VALUES (op->>'id', op->>'user', op->>'host', op->>'kind', op->>'serial', (op->>'position')::bigint, op->>'pin_mode',
                            (op->>'remaining')::bigint, (op->>'expires')::bigint);
                WHEN 'audit' THEN
                    INSERT INTO audit (time, actor_kind, actor, address, action, "user", serial, result, detail)
                    VALUES ((op->>'time')::bigint, op->>'actor_kind', op->>'actor', op->>'address', op->>'action', op->>'user',
                            op->>'serial', op->>'result', op->>'detail');
                ELSE
                    RAISE EXCEPTION 'securotp_apply: unknown operation %', op->>'op';
                END CASE;
                GET DIAGNOSTICS changed = ROW_COUNT;
                IF changed <> 1 THEN
                    RAISE EXCEPTION 'securotp_apply: write % changed no row', applied USING ERRCODE = 'SOTP1', DETAIL = applied::text;
                END IF;
                applied := applied + 1;
            END LOOP;
            RETURN applied;
        END
        $$
        """

    /// Installed by schema migration 3: the documents of several verifications, each applied
    /// all or nothing (a subtransaction; a conflict rolls back that document alone), then
    /// committed *inside the call*. With the extended protocol an autocommit statement commits
    /// only at Sync, after its result rows are sent — so a plain `SELECT securotp_apply(...)`
    /// would let a host hear "accept" before the write is durable. `outcomes` has one value per
    /// document: the number of writes applied, or -1 - the index of the write that conflicted.
    /// Documents stay under 64 per call: PostgreSQL caches that many subtransaction IDs per
    /// backend before other sessions' snapshots get slower.
    static let committedProcedure = """
        CREATE PROCEDURE securotp_apply_committed(documents jsonb, INOUT outcomes bigint[] DEFAULT NULL) LANGUAGE plpgsql AS $$
        DECLARE
            document jsonb;
            detail text;
        BEGIN
            outcomes := '{}';
            FOR document IN SELECT value FROM jsonb_array_elements(documents->'documents') LOOP
                BEGIN
                    outcomes := outcomes || securotp_apply(document);
                EXCEPTION WHEN SQLSTATE 'SOTP1' THEN
                    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
                    outcomes := outcomes || (-1 - detail::bigint);
                END;
            END LOOP;
            COMMIT;
        END
        $$
        """

    /// The statement, prepared once per connection.
    struct Apply: PostgresPreparedStatement {
        static let sql = "SELECT securotp_apply($1::jsonb)"
        typealias Row = Int64
        let document: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(document)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// Several verifications' documents in one call, committed before the call answers.
    struct ApplyCommitted: PostgresPreparedStatement {
        static let sql = "CALL securotp_apply_committed($1::jsonb)"
        typealias Row = [Int64]
        let documents: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(documents)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> [Int64] { try row.decode([Int64].self) }
    }

    /// A write that changed no row: `write` is nil for a challenge or audit row, which cannot
    /// conflict unless the database itself misbehaves.
    struct Conflict: Error {
        let write: StateWrite?

        var storeError: StoreError { write?.conflict ?? StoreError(.database, "the database refused a verification's record; try again") }
    }

    typealias Op = [(key: String, value: JSONWriter.Field)]

    static func document(_ writes: [StateWrite], challenge: PendingChallenge?, audit: AuditEntry?) -> String {
        text(JSONWriter.object([("ops", .objects(ops(writes, challenge: challenge, audit: audit)))]))
    }

    /// The argument of `securotp_apply_committed`: one `ops` list per verification.
    static func documents(_ lists: [[Op]]) -> String {
        text(JSONWriter.object([("documents", .objects(lists.map { [("ops", .objects($0))] }))]))
    }

    static func ops(_ writes: [StateWrite], challenge: PendingChallenge?, audit: AuditEntry?) -> [Op] {
        var ops = writes.map(op)
        if let challenge { ops.append(op(challenge)) }
        if let audit { ops.append(op(audit)) }
        return ops
    }

    private static func text(_ body: SecretBytes) -> String { body.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    static func op(_ write: StateWrite) -> Op {
        switch write {
        case .advanceStep(let serial, let from, let to, let drift, let lastUsed):
            [("op", .text("advance_step")), ("serial", .text(serial)), ("from", .integer(from)), ("to", .integer(to)),
             ("drift", .integer(drift)), ("last_used", .integer(lastUsed))]
        case .advanceCounter(let serial, let from, let to, let lastUsed):
            [("op", .text("advance_counter")), ("serial", .text(serial)), ("from", .integer(from)), ("to", .integer(to)),
             ("last_used", .integer(lastUsed))]
        case .markUsed(let serial, let lastUsed):
            [("op", .text("mark_used")), ("serial", .text(serial)), ("last_used", .integer(lastUsed))]
        case .spendRecoveryCode(let user, let id, let usedAt):
            [("op", .text("spend_recovery_code")), ("user", .text(user)), ("id", .text(id)), ("used_at", .integer(usedAt))]
        case .setFailures(let key, let expected, let to, let at):
            [("op", .text("set_failures")), ("key", .text(key)), ("expected_failures", .integer(Int64(expected.failures))),
             ("expected_locked_until", .integer(expected.lockedUntil)), ("failures", .integer(Int64(to.failures))),
             ("locked_until", .integer(to.lockedUntil)), ("at", .integer(at))]
        case .clearFailures(let key, let expected):
            [("op", .text("clear_failures")), ("key", .text(key)), ("expected_failures", .integer(Int64(expected.failures))),
             ("expected_locked_until", .integer(expected.lockedUntil))]
        case .setPIN(let user, let serial, let mode, let hash, let length):
            [("op", .text("set_pin")), ("user", .text(user)), ("serial", .text(serial)), ("mode", .text(mode.rawValue)),
             ("hash", .text(hash.withUnsafeBufferPointer { Hex.encode($0) })), ("length", .integer(Int64(length)))]
        case .clearPIN(let user, let serial):
            [("op", .text("clear_pin")), ("user", .text(user)), ("serial", .text(serial))]
        case .requirePIN(let user, let serial, let mode):
            [("op", .text("require_pin")), ("user", .text(user)), ("serial", .text(serial)), ("mode", .text(mode.rawValue))]
        }
    }

    /// Also drops the challenges that expired a lifetime ago (the table cleans itself as it is used).
    static func op(_ challenge: PendingChallenge) -> Op {
        [("op", .text("challenge")), ("prune_before", .integer(challenge.expires - PendingChallenge.lifetime)), ("id", .text(challenge.id)),
         ("user", .text(challenge.user)), ("host", .text(challenge.host)), ("kind", .text(challenge.kind.rawValue)),
         ("serial", .text(challenge.serial)), ("position", .integer(challenge.position)), ("pin_mode", .text(challenge.pinMode.rawValue)),
         ("remaining", .integer(Int64(challenge.remaining))), ("expires", .integer(challenge.expires))]
    }

    /// `entry` bounded and printable (AuditEntry.bounded), as every audit row is stored.
    static func op(_ entry: AuditEntry) -> Op {
        let entry = entry.bounded()
        return [("op", .text("audit")), ("time", .integer(entry.time)), ("actor_kind", .text(entry.actorKind)), ("actor", .text(entry.actor)),
                ("address", .text(entry.address)), ("action", .text(entry.action)), ("user", .text(entry.user)), ("serial", .text(entry.serial)),
                ("result", .text(entry.result)), ("detail", .text(entry.detail))]
    }
}

extension PostgresTokenService {
    /// Applies `writes`, then `challenge` and `audit`, in the caller's transaction or as one
    /// atomic statement of their own; throws `PostgresWrites.Conflict` when a write changed no
    /// row (nothing of the call is then applied).
    func apply(_ writes: [StateWrite], challenge: PendingChallenge? = nil, audit: AuditEntry? = nil,
               _ connection: PostgresConnection) async throws {
        let count = writes.count + (challenge == nil ? 0 : 1) + (audit == nil ? 0 : 1)
        guard count > 0 else { return }
        let statement = PostgresWrites.Apply(document: PostgresWrites.document(writes, challenge: challenge, audit: audit))
        var applied: Int64 = -1
        do {
            for try await value in try await connection.execute(statement, logger: logger) { applied = value }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == PostgresWrites.conflictState {
            let index = Int(error.serverInfo?[.detail] ?? "") ?? -1
            throw PostgresWrites.Conflict(write: writes.indices.contains(index) ? writes[index] : nil)
        }
        guard applied == Int64(count) else { throw PostgresWrites.Conflict(write: nil) }
    }

    func append(_ entry: AuditEntry, _ connection: PostgresConnection) async throws {
        try await apply([], audit: entry, connection)
    }
}
