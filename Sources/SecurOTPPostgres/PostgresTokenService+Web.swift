import Foundation
import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Web devices on PostgreSQL (schema 5), as the SQLite store's (docs/push.md "Phones without an
/// app"). Every take is one conditional statement, so any node accepts a challenge, a code or
/// an enrollment once.
extension PostgresTokenService: WebDeviceService {
    private func pendingWebDevice(hash: [UInt8], now: Int64, _ connection: PostgresConnection) async throws -> (id: String, user: String, name: String, expires: Int64)? {
        for try await (id, user, name, expires) in try await connection.query("""
            SELECT id, "user", name, activation_expires FROM devices WHERE activation_hash = \(Self.bytea(hash)) AND state = 'pending'
            """, logger: logger).decode((String, String, String, Int64).self) {
            return expires > now ? (id, user, name, expires) : nil
        }
        return nil
    }

    private func webAudit(_ action: String, _ device: String, _ user: String, _ result: String, _ detail: String, address: String, now: Int64,
                          _ connection: PostgresConnection) async throws {
        try await append(AuditEntry(time: now, actorKind: "device", actor: device, address: address, action: action, user: user, serial: device,
                                    result: result, detail: detail), connection)
    }

    public func webEnrollOptions(_ request: WebEnrollOptionsRequest, address: String) async throws(ServiceError) -> WebEnrollOptions {
        let url = try WebEnrollmentRules.publicURL(pushPolicy)
        guard let normalized = PushRules.normalizedCode(request.activationCode) else { throw WebEnrollmentRules.unknownCode }
        let challenge = try WebEnrollmentRules.newChallenge()
        let now = self.now()
        return try await transaction("making web enrollment options") { connection in
            guard let device = try await self.pendingWebDevice(hash: PushRules.codeHash(normalized), now: now, connection) else {
                throw WebEnrollmentRules.unknownCode
            }
            let expires = min(device.expires, now + WebEnrollmentRules.challengeLifetime)
            try await connection.query("""
                INSERT INTO web_devices (device, challenge, challenge_expires) VALUES (\(device.id), \(Self.bytea(challenge)), \(expires))
                ON CONFLICT (device) DO UPDATE SET challenge = excluded.challenge, challenge_expires = excluded.challenge_expires
                """, logger: self.logger)
            return WebEnrollmentRules.options(device: device.id, user: device.user, url: url, challenge: challenge, expires: expires)
        }
    }

    public func webEnroll(_ request: WebEnrollRequest, address: String) async throws(ServiceError) -> WebEnrolled {
        let url = try WebEnrollmentRules.publicURL(pushPolicy)
        let parts = try WebEnrollmentRules.parts(request)
        let hash = PushRules.codeHash(parts.normalizedCode)
        let now = self.now()
        let outcome = try await transaction("enrolling a web device") { connection -> Result<WebEnrolled, ServiceError> in
            let action = "device enroll web"
            guard let device = try await self.pendingWebDevice(hash: hash, now: now, connection) else {
                try await self.webAudit(action, "", "", "denied", "unknown, used or expired activation code", address: address, now: now, connection)
                return .failure(WebEnrollmentRules.unknownCode)
            }
            // Take the challenge (one node wins): whatever the check says, never accepted again.
            var challenge: [UInt8] = []
            for try await (taken) in try await connection.query("""
                WITH old AS (SELECT challenge FROM web_devices WHERE device = \(device.id) AND challenge IS NOT NULL
                             AND challenge_expires > \(now) FOR UPDATE)
                UPDATE web_devices SET challenge = NULL FROM old WHERE device = \(device.id) RETURNING old.challenge
                """, logger: self.logger).decode(ByteBuffer?.self) { challenge = Self.bytes(taken) }
            let credential: WebAuthnRegistration.Credential
            switch WebEnrollmentRules.check(parts, challenge: challenge, url: url) {
            case .success(let accepted): credential = accepted
            case .failure(let refusal):
                try await self.webAudit(action, device.id, device.user, "denied", refusal.audit, address: address, now: now, connection)
                return .failure(refusal.error)
            }
            var holder: String?
            for try await (id) in try await connection.query("""
                SELECT device FROM web_devices WHERE credential_id = \(Self.bytea(credential.credentialID))
                """, logger: self.logger).decode(String.self) { holder = id }
            if let holder {
                try await self.webAudit(action, device.id, device.user, "denied", WebEnrollmentRules.credentialRegisteredDetail(holder: holder),
                                        address: address, now: now, connection)
                return .failure(WebEnrollmentRules.credentialRegistered)
            }
            guard let unusable = SecretBytes.random(count: 32) else { throw ServiceError(.system, "no randomness available from getrandom(2)") }
            guard try await self.changed("""
                UPDATE devices SET activation_hash = NULL, state = 'active', aaid = \(WebEnrollmentRules.aaid),
                    public_key = \(Self.bytea(credential.publicKey)), credential_hash = \(Self.bytea(unusable.withUnsafeBytes { Array($0) })),
                    user_verification = true
                WHERE id = \(device.id) AND activation_hash = \(Self.bytea(hash)) AND state = 'pending' RETURNING 1
                """, connection) else { return .failure(WebEnrollmentRules.unknownCode) }
            try await connection.query("""
                UPDATE web_devices SET credential_id = \(Self.bytea(credential.credentialID)), origin = \(url.origin) WHERE device = \(device.id)
                """, logger: self.logger)
            try await self.webAudit(action, device.id, device.user, "ok", WebEnrollmentRules.aaid, address: address, now: now, connection)
            return .success(WebEnrolled(device: device.id, user: device.user, state: "active"))
        }
        return try outcome.get()
    }

    public func webSessionOptions(address: String) async throws(ServiceError) -> WebSessionOptions {
        let url = try WebEnrollmentRules.publicURL(pushPolicy)
        let challenge = try WebEnrollmentRules.newChallenge()
        let now = self.now()
        let expires = now + WebSessionRules.challengeLifetime
        try await transaction("making a web session challenge") { connection in
            try await connection.query("DELETE FROM web_sessions WHERE expires <= \(now)", logger: self.logger)
            try await connection.query("""
                INSERT INTO web_sessions (hash, kind, expires) VALUES (\(Self.bytea(WebSessionRules.hash(challenge))), 'challenge', \(expires))
                """, logger: self.logger)
        }
        return WebSessionOptions(challenge: PushRules.base64URLEncode(challenge), rpId: url.rpID, expires: expires)
    }

    public func webSession(_ request: WebSessionRequest, address: String) async throws(ServiceError) -> WebSession {
        let parts = try WebSessionRules.parts(request)
        let token = try WebSessionRules.newToken()
        let now = self.now()
        let outcome = try await transaction("opening a web session") { connection -> Result<WebSession, ServiceError> in
            let action = "device web session"
            guard try await self.changed("""
                DELETE FROM web_sessions WHERE hash = \(Self.bytea(WebSessionRules.hash(parts.challenge))) AND kind = 'challenge'
                AND expires > \(now) RETURNING 1
                """, connection) else {
                try await self.webAudit(action, "", "", "denied", "unknown, used or expired session challenge", address: address, now: now, connection)
                return .failure(WebSessionRules.refused)
            }
            var found: (String, String)?
            for try await (device, origin) in try await connection.query("""
                SELECT device, origin FROM web_devices WHERE credential_id = \(Self.bytea(parts.credentialID))
                """, logger: self.logger).decode((String, String).self) { found = (device, origin) }
            let origin = found?.1 ?? ""
            guard let deviceID = found?.0, let row = try await self.device(id: deviceID, connection), WebSessionRules.usable(row) else {
                try await self.webAudit(action, found?.0 ?? "", "", "denied", "unknown passkey or device not active", address: address, now: now, connection)
                return .failure(WebSessionRules.refused)
            }
            let counter: UInt32
            switch WebSessionRules.check(parts, device: row, origin: origin) {
            case .accepted(let advanced): counter = advanced
            case .refused(let detail):
                try await self.webAudit(action, row.id, row.user, "denied", detail, address: address, now: now, connection)
                return .failure(WebSessionRules.refused)
            }
            // Checked again where it is stored, as an approval's counter: exactly once across nodes.
            guard try await self.advanceSignCounter(device: row.id, to: counter, now: now, connection) else {
                try await self.webAudit(action, row.id, row.user, "denied", SignatureCounter.notAdvancedDetail, address: address, now: now, connection)
                return .failure(WebSessionRules.refused)
            }
            let expires = now + WebSessionRules.sessionLifetime
            try await connection.query("""
                INSERT INTO web_sessions (hash, kind, device, expires) VALUES (\(Self.bytea(WebSessionRules.hash(Array(token.utf8)))), 'session', \(row.id), \(expires))
                """, logger: self.logger)
            try await self.webAudit(action, row.id, row.user, "ok", "", address: address, now: now, connection)
            return .success(WebSession(device: row.id, user: row.user, session: token, expires: expires))
        }
        return try outcome.get()
    }

    public func authenticateWebSession(_ token: String, address: String) async throws(ServiceError) -> Caller {
        guard token.hasPrefix(WebSessionRules.prefix), token.utf8.count <= 64 else { throw AccessRules.refused }
        let now = self.now()
        let row = try await run("authenticating a web session") { connection -> PushDeviceRow? in
            var id: String?
            for try await (device) in try await connection.query("""
                SELECT device FROM web_sessions WHERE hash = \(Self.bytea(WebSessionRules.hash(Array(token.utf8)))) AND kind = 'session' AND expires > \(now)
                """, logger: self.logger).decode(String.self) { id = device }
            guard let id else { return nil }
            return try await self.device(id: id, connection)
        }
        guard let row, row.state != "pending" else { throw AccessRules.refused }
        return Caller(kind: .device, name: row.id, address: address, users: [row.user])
    }
}
