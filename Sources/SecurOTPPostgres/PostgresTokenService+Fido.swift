import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Remote mode's security keys on PostgreSQL (docs/fido.md, "Remote mode"), as on the SQLite
/// store (SQLiteTokenService+Fido.swift): the decisions are FidoDecisions', the row rules
/// Store's (Store+Fido.swift); here the rows are read and written. Credentials are `tokens`
/// rows of kind `fido`, challenges `challenges` rows of kind `fido`. Nodes share the database.
/// A verification holds the user's advisory lock, so two assertions of one user, on any nodes,
/// are decided in turn: the second reads the counter the first wrote (a repeated counter is a
/// clone, as on SQLite). The two steps that make an assertion count once are single statements
/// besides: the challenge is taken with `DELETE … RETURNING` (one call on one node gets it) and
/// the counter moves with `UPDATE … WHERE state = 'active' AND counter = <what the login read>
/// RETURNING`; a row changed meanwhile without the lock (deleted by an admin) is refused as a
/// lost race.
extension PostgresTokenService {
    static let fidoColumns = "serial, counter, sealed_seed, issuer, state, created, last_used, source"

    /// The user's FIDO credentials, active and cloned, oldest first; a row that does not open is left out.
    func fidoCredentials(user: String, _ connection: PostgresConnection) async throws -> [FidoCredential] {
        let rows = try await connection.query("""
            SELECT \(unescaped: Self.fidoColumns) FROM tokens WHERE "user" = \(user) AND kind = 'fido' ORDER BY created, serial
            """, logger: logger)
        var credentials: [FidoCredential] = []
        for try await (serial, counter, sealed, origin, state, created, lastUsed, source)
            in rows.decode((String, Int64, ByteBuffer, String, String, Int64, Int64, String).self) {
            guard let credential = Store.openFido(serial: serial, counter: counter, sealed: Array(sealed.readableBytesView), origin: origin,
                                                  state: state, created: created, lastUsed: lastUsed, source: source, user: user,
                                                  key: keys.dataKey) else { continue }
            credentials.append(credential)
        }
        return credentials
    }

    public func fidoChallenge(_ request: FidoChallengeRequest, caller: Caller) async throws(ServiceError) -> FidoChallengeResponse {
        let user = try FidoDecisions.challengeUser(request)
        return try await transaction("issuing a FIDO challenge to \(user)") { connection in
            let now = self.now()
            let locked = try await self.failures(user, connection).isLocked(at: now)
            let (pending, response) = try FidoDecisions.offer(user: user, host: caller.name, credentials: try await self.fidoCredentials(user: user, connection),
                                                              origin: request.origin, appID: request.appid, locked: locked, now: now)
            if let pending { try await self.apply([], challenge: pending, connection) }
            return response
        }
    }

    public func fidoVerify(_ request: FidoVerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let assertion = try FidoDecisions.Assertion(request)
        let policy = settings.policy
        return try await transaction("verifying a FIDO assertion of \(assertion.user)") { connection in
            let now = self.now()
            let user = assertion.user
            // The user's lock first, as every failure count takes it (push's too): the lockout read
            // below then holds until commit, and two assertions of one user, on any nodes, are
            // decided one after the other, so the second sees the first's counter (a repeated
            // counter is caught as a clone, as on SQLite) and no lock is asked for while this
            // transaction holds row locks (no deadlock with a challenge prune).
            try await self.lock(user, connection)
            let challenge = try await self.takeChallenge(id: assertion.id, user: user, host: caller.name, now: now, connection)
            let credential = try await self.fidoCredentials(user: user, connection).first { $0.serial == assertion.serial }
            let read = try await self.failures(user, connection)
            var verdict = FidoDecisions.decide(assertion, challenge: challenge, credential: credential, locked: read.isLocked(at: now))
            switch verdict.write {
            case .none: break
            case .markCloned(let serial):
                try await connection.query("""
                    UPDATE tokens SET state = 'cloned' WHERE "user" = \(user) AND serial = \(serial) AND kind = 'fido'
                    """, logger: self.logger)
            case .counter(let serial, let from, let to):
                let moved = try await self.changed("""
                    UPDATE tokens SET counter = \(Int64(to)), last_used = \(now)
                    WHERE "user" = \(user) AND serial = \(serial) AND kind = 'fido' AND state = 'active' AND counter = \(Int64(from))
                    RETURNING 1
                    """, connection)
                if !moved { verdict = FidoDecisions.lostRace(assertion) }
            }
            var response = verdict.response
            if verdict.countsFailure {
                let next = Lockout.afterFailure(read, deny: policy.deny, unlockTime: policy.unlockTime, now: now)
                try await self.apply([.setFailures(key: user, expected: read, to: next, at: now)], connection)
                response = FidoDecisions.counted(response, failures: next.failures, lockedNow: next.lockedUntil != 0)
            } else if response.result == .accept, Lockout.successClears(read, now: now) {
                // As an accepted code: the count goes, unless another login changed the row meanwhile.
                try await connection.query("""
                    DELETE FROM users WHERE name = \(user) AND failures = \(Int64(read.failures)) AND locked_until = \(read.lockedUntil)
                    """, logger: self.logger)
            }
            try await self.append(FidoDecisions.verifiedAudit(caller, assertion, response, verdict, now: now), connection)
            return response
        }
    }

    public func addFido(user: String, _ request: FidoAddRequest, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        let user = try RequestRules.user(user)
        let credentials = try FidoDecisions.credentials(request)
        let maxTokens = settings.maxTokens
        return try await transaction("adding FIDO credentials for \(user)") { connection in
            try await self.lock(user, connection)
            let now = self.now()
            var existing = 0
            for try await count in try await connection.query("SELECT count(*) FROM tokens WHERE \"user\" = \(user)", logger: self.logger)
                .decode(Int64.self) { existing = Int(count) }
            try Store.checkFidoAdd(credentials, user: user, existingTokens: existing, known: try await self.fidoCredentials(user: user, connection),
                                   maxTokens: maxTokens, limitWhere: "")
            var serials: [String] = []
            while serials.count < credentials.count {
                let serial = try await self.freshSerial(connection)
                if !serials.contains(serial) { serials.append(serial) }
            }
            serials = TokenSerial.ascending(serials)
            var added: [FidoCredential] = []
            for (given, serial) in zip(credentials, serials) {
                let credential = Store.newFido(given, serial: serial, source: request.source, now: now)
                let sealed = try Store.sealFido(credential, key: self.keys.dataKey, user: user)
                try await connection.query("""
                    INSERT INTO tokens (serial, "user", kind, algorithm, digits, period, counter, sealed_seed, issuer, created, source, suite)
                    VALUES (\(credential.serial), \(user), 'fido', \(credential.type.rawValue), 0, 0, 0, \(Self.bytea(sealed)), \(credential.origin),
                            \(now), \(request.source), \(credential.attributes))
                    """, logger: self.logger)
                try await self.append(FidoDecisions.addedAudit(caller, user: user, credential, source: request.source, now: now), connection)
                added.append(credential)
            }
            return FidoCredentialList(credentials: added.map(FidoCredentialInfo.init))
        }
    }

    public func fidoCredentials(user: String, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        let user = try RequestRules.user(user)
        return try await run("reading \(user)'s FIDO credentials") { connection in
            FidoCredentialList(credentials: try await self.fidoCredentials(user: user, connection).map(FidoCredentialInfo.init))
        }
    }
}
