import SecurOTPCore
import SecurOTPStore

/// Web devices on the SQLite store (schema 6, docs/push.md "Phones without an app").
extension SQLiteTokenService: WebDeviceService {
    private static func webCall<R>(_ body: () throws(StoreError) -> R) throws(ServiceError) -> R { try storeCall(body) }

    /// The pending device an activation code names, if the code is still valid (not taken).
    private static func pendingDevice(_ db: SQLiteDatabase, hash: [UInt8], now: Int64) throws(StoreError) -> (id: String, user: String, expires: Int64)? {
        let statement = try db.prepare("SELECT id, user, activation_expires FROM devices WHERE activation_hash = ? AND state = 'pending'")
        defer { statement.reset() }
        try statement.bind(.blob(hash))
        guard try statement.step() else { return nil }
        let expires = statement.integer(2)
        return expires > now ? (statement.text(0), statement.text(1), expires) : nil
    }

    public func webEnrollOptions(_ request: WebEnrollOptionsRequest, address: String) async throws(ServiceError) -> WebEnrollOptions {
        let url = try WebEnrollmentRules.publicURL(pushPolicy)
        guard let normalized = PushRules.normalizedCode(request.activationCode) else { throw WebEnrollmentRules.unknownCode }
        let challenge = try WebEnrollmentRules.newChallenge()
        return try await runService { (store, _) throws(ServiceError) -> WebEnrollOptions in
            let now = self.now()
            return try Self.webCall { () throws(StoreError) -> WebEnrollOptions in
                guard let device = try Self.pendingDevice(store.database, hash: PushRules.codeHash(normalized), now: now) else {
                    throw StoreError(.notFound, WebEnrollmentRules.unknownCode.message)
                }
                let expires = min(device.expires, now + WebEnrollmentRules.challengeLifetime)
                try store.database.prepare("""
                    INSERT INTO web_devices (device, challenge, challenge_expires) VALUES (?,?,?)
                    ON CONFLICT (device) DO UPDATE SET challenge = excluded.challenge, challenge_expires = excluded.challenge_expires
                    """).bind(.text(device.id), .blob(challenge), .integer(expires)).run()
                return WebEnrollmentRules.options(device: device.id, user: device.user, url: url, challenge: challenge, expires: expires)
            }
        }
    }

    public func webEnroll(_ request: WebEnrollRequest, address: String) async throws(ServiceError) -> WebEnrolled {
        let url = try WebEnrollmentRules.publicURL(pushPolicy)
        let parts = try WebEnrollmentRules.parts(request)
        // A refusal still commits the taken challenge (single use); only then is it thrown.
        let outcome = try await runService { (store, access) throws(ServiceError) -> Result<WebEnrolled, ServiceError> in
            let db = store.database
            let push = PushTables(db: db)
            let now = self.now()
            let hash = PushRules.codeHash(parts.normalizedCode)
            func audit(_ device: String, _ user: String, _ result: String, _ detail: String) throws(StoreError) {
                try access.append(AuditEntry(time: now, actorKind: "device", actor: device, address: address, action: "device enroll web",
                                             user: user, serial: device, result: result, detail: detail))
            }
            return try Self.webCall { () throws(StoreError) -> Result<WebEnrolled, ServiceError> in
                guard let device = try Self.pendingDevice(db, hash: hash, now: now) else {
                    try audit("", "", "denied", "unknown, used or expired activation code")
                    return .failure(WebEnrollmentRules.unknownCode)
                }
                // Take the challenge: whatever the check says, it is never accepted again.
                let stored = try db.prepare("SELECT challenge FROM web_devices WHERE device = ? AND challenge IS NOT NULL AND challenge_expires > ?")
                defer { stored.reset() }
                try stored.bind(.text(device.id), .integer(now))
                let challenge = try stored.step() ? stored.blob(0) : []
                stored.reset()
                try db.prepare("UPDATE web_devices SET challenge = NULL WHERE device = ?").bind(.text(device.id)).run()
                let credential: WebAuthnRegistration.Credential
                switch WebEnrollmentRules.check(parts, challenge: challenge, url: url) {
                case .success(let accepted): credential = accepted
                case .failure(let refusal):
                    try audit(device.id, device.user, "denied", refusal.audit)
                    return .failure(refusal.error)
                }
                let holder = try db.prepare("SELECT device FROM web_devices WHERE credential_id = ?")
                defer { holder.reset() }
                try holder.bind(.blob(credential.credentialID))
                if try holder.step() {
                    try audit(device.id, device.user, "denied", WebEnrollmentRules.credentialRegisteredDetail(holder: holder.text(0)))
                    return .failure(WebEnrollmentRules.credentialRegistered)
                }
                holder.reset()
                guard let row = try push.takeActivation(hash: hash), row.id == device.id else {
                    return .failure(WebEnrollmentRules.unknownCode)
                }
                // A web device has no device credential: its sessions are assertions.
                guard let unusable = SecretBytes.random(count: 32) else { throw StoreError(.system, "no randomness available from getrandom(2)") }
                try push.activate(id: row.id, name: row.name, aaid: WebEnrollmentRules.aaid, publicKey: credential.publicKey,
                                  credentialHash: unusable.withUnsafeBytes { Array($0) }, userVerification: true)
                try db.prepare("UPDATE web_devices SET credential_id = ?, origin = ? WHERE device = ?")
                    .bind(.blob(credential.credentialID), .text(url.origin), .text(row.id)).run()
                try audit(row.id, row.user, "ok", WebEnrollmentRules.aaid)
                return .success(WebEnrolled(device: row.id, user: row.user, state: "active"))
            }
        }
        return try outcome.get()
    }

    // MARK: sessions

    public func webSessionOptions(address: String) async throws(ServiceError) -> WebSessionOptions {
        let url = try WebEnrollmentRules.publicURL(pushPolicy)
        let challenge = try WebEnrollmentRules.newChallenge()
        return try await runService { (store, _) throws(ServiceError) -> WebSessionOptions in
            let now = self.now()
            let expires = now + WebSessionRules.challengeLifetime
            try Self.webCall { () throws(StoreError) in
                try store.database.prepare("DELETE FROM web_sessions WHERE expires <= ?").bind(.integer(now)).run()
                try store.database.prepare("INSERT INTO web_sessions (hash, kind, expires) VALUES (?, 'challenge', ?)")
                    .bind(.blob(WebSessionRules.hash(challenge)), .integer(expires)).run()
            }
            return WebSessionOptions(challenge: PushRules.base64URLEncode(challenge), rpId: url.rpID, expires: expires)
        }
    }

    public func webSession(_ request: WebSessionRequest, address: String) async throws(ServiceError) -> WebSession {
        let parts = try WebSessionRules.parts(request)
        let token = try WebSessionRules.newToken()
        // The taken challenge commits even when the assertion is refused; only then is it thrown.
        let outcome = try await runService { (store, access) throws(ServiceError) -> Result<WebSession, ServiceError> in
            let db = store.database
            let push = PushTables(db: db)
            let now = self.now()
            return try Self.webCall { () throws(StoreError) -> Result<WebSession, ServiceError> in
                func audit(_ device: String, _ user: String, _ result: String, _ detail: String) throws(StoreError) {
                    try access.append(AuditEntry(time: now, actorKind: "device", actor: device, address: address, action: "device web session",
                                                 user: user, serial: device, result: result, detail: detail))
                }
                try db.prepare("DELETE FROM web_sessions WHERE hash = ? AND kind = 'challenge' AND expires > ?")
                    .bind(.blob(WebSessionRules.hash(parts.challenge)), .integer(now)).run()
                guard db.changes == 1 else {
                    try audit("", "", "denied", "unknown, used or expired session challenge")
                    return .failure(WebSessionRules.refused)
                }
                let lookup = try db.prepare("SELECT device, origin FROM web_devices WHERE credential_id = ?")
                defer { lookup.reset() }
                try lookup.bind(.blob(parts.credentialID))
                guard try lookup.step() else {
                    try audit("", "", "denied", "unknown passkey")
                    return .failure(WebSessionRules.refused)
                }
                let deviceID = lookup.text(0)
                let origin = lookup.text(1)
                lookup.reset()
                guard let row = try push.device(id: deviceID), WebSessionRules.usable(row) else {
                    try audit(deviceID, "", "denied", "device not active")
                    return .failure(WebSessionRules.refused)
                }
                // One transaction: the counter checked here is the one stored below, exactly once.
                let counter: UInt32
                switch WebSessionRules.check(parts, device: row, origin: origin) {
                case .accepted(let advanced): counter = advanced
                case .refused(let detail):
                    try audit(row.id, row.user, "denied", detail)
                    return .failure(WebSessionRules.refused)
                }
                let expires = now + WebSessionRules.sessionLifetime
                try db.prepare("INSERT INTO web_sessions (hash, kind, device, expires) VALUES (?, 'session', ?, ?)")
                    .bind(.blob(WebSessionRules.hash(Array(token.utf8))), .text(row.id), .integer(expires)).run()
                try push.recordUse(id: row.id, counter: Int64(counter), now: now)
                try audit(row.id, row.user, "ok", "")
                return .success(WebSession(device: row.id, user: row.user, session: token, expires: expires))
            }
        }
        return try outcome.get()
    }

    public func authenticateWebSession(_ token: String, address: String) async throws(ServiceError) -> Caller {
        guard token.hasPrefix(WebSessionRules.prefix), token.utf8.count <= 64 else { throw AccessRules.refused }
        let found = try await runService { (store, _) throws(ServiceError) -> PushDeviceRow? in
            let now = self.now()
            return try Self.webCall { () throws(StoreError) -> PushDeviceRow? in
                let statement = try store.database.prepare("SELECT device FROM web_sessions WHERE hash = ? AND kind = 'session' AND expires > ?")
                defer { statement.reset() }
                try statement.bind(.blob(WebSessionRules.hash(Array(token.utf8))), .integer(now))
                guard try statement.step() else { return nil }
                let id = statement.text(0)
                statement.reset()
                return try PushTables(db: store.database).device(id: id)
            }
        }
        guard let row = found, row.state != "pending" else { throw AccessRules.refused }
        return Caller(kind: .device, name: row.id, address: address, users: [row.user])
    }
}
