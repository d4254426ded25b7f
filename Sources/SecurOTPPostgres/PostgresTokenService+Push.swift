import Foundation
import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Push approval on PostgreSQL (docs/push.md), behaving as the SQLite store's
/// (SQLiteTokenService+Push.swift) with the rules of SecurOTPService/Push. Nodes share the
/// database, so every change of a request's state is one conditional statement
/// (`UPDATE … WHERE state = 'pending' … RETURNING`): whichever node runs it first wins, and an
/// approval is handed out once. Each state change also sends `NOTIFY securotp_push` with the key
/// of the waits it ends, delivered at commit to every node (PushChangeFeed).
extension PostgresTokenService: DeviceService, PushChangeFeed, PushUpkeep {
    static let unknownDevice = PushDecisions.unknownDevice
    static let pushChannel = "securotp_push"

    static let deviceColumns = """
        id, "user", name, aaid, state, activation_expires, public_key, certificate, credential_hash, sign_counter, user_verification, \
        unlock_hash, unlock_expires, created, last_used, offline_secret
        """
    static let requestColumns = """
        id, "user", host, service, remote_address, tty, command, nonce, number, created, expires, state, wrong_numbers, device, \
        authenticator_data, client_data_json, signature, result
        """

    static func deviceRow(_ row: PostgresRow) throws -> PushDeviceRow {
        var c = row.makeIterator()
        return PushDeviceRow(id: try next(&c), user: try next(&c), name: try next(&c), aaid: try next(&c), state: try next(&c),
                             activationExpires: try next(&c), publicKey: bytes(try next(&c)), certificate: try next(&c),
                             credentialHash: bytes(try next(&c)), signCounter: try next(&c), userVerification: try next(&c),
                             unlockHash: bytes(try next(&c)), unlockExpires: try next(&c), created: try next(&c), lastUsed: try next(&c),
                             offlineSecret: bytes(try next(&c)))
    }

    static func requestRow(_ row: PostgresRow) throws -> PushRequestRow {
        var c = row.makeIterator()
        return PushRequestRow(id: try next(&c), user: try next(&c), host: try next(&c), service: try next(&c), remoteAddress: try next(&c),
                              tty: try next(&c), command: try next(&c), nonce: try next(&c), number: try next(&c), created: try next(&c),
                              expires: try next(&c), state: try next(&c), wrongNumbers: Int(clamping: try next(&c) as Int64), device: try next(&c),
                              authenticatorData: bytes(try next(&c)), clientDataJSON: bytes(try next(&c)), signature: bytes(try next(&c)),
                              result: try next(&c))
    }

    // MARK: reads and conditional writes

    /// Stores a device's signature counter in the statement that checks it again, so that of
    /// two nodes taking the same counter one stores it: SignatureCounter.accepts as SQL (0 after
    /// 0, else it must rise; a stored value outside 0...UInt32.max is corrupt and nothing follows
    /// it, as SignatureCounter.stored reads it). false: it did not advance (a replay or a clone).
    func advanceSignCounter(device: String, to counter: UInt32, now: Int64, _ connection: PostgresConnection) async throws -> Bool {
        try await self.changed("""
            UPDATE devices SET sign_counter = \(Int64(counter)), last_used = \(now)
            WHERE id = \(device) AND sign_counter BETWEEN 0 AND \(Int64(UInt32.max))
              AND ((\(Int64(counter)) = 0 AND sign_counter = 0) OR sign_counter < \(Int64(counter))) RETURNING 1
            """, connection)
    }

    func device(id: String, _ connection: PostgresConnection) async throws -> PushDeviceRow? {
        for try await row in try await connection.query("SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE id = \(id)", logger: logger) {
            return try Self.deviceRow(row)
        }
        return nil
    }

    func pushRequest(id: String, _ connection: PostgresConnection) async throws -> PushRequestRow? {
        for try await row in try await connection.query("SELECT \(unescaped: Self.requestColumns) FROM push_requests WHERE id = \(id)", logger: logger) {
            return try Self.requestRow(row)
        }
        return nil
    }

    /// Whether `statement` (ending in `RETURNING 1`) changed a row.
    func changed(_ statement: PostgresQuery, _ connection: PostgresConnection) async throws -> Bool {
        var count = 0
        for try await _ in try await connection.query(statement, logger: logger) { count += 1 }
        return count > 0
    }

    /// Moves a request from `from` to `to`; false when another call (on any node) moved it first.
    func transition(_ id: String, from: String, to: String, _ connection: PostgresConnection) async throws -> Bool {
        try await changed("UPDATE push_requests SET state = \(to) WHERE id = \(id) AND state = \(from) RETURNING 1", connection)
    }

    /// Ends the waits on `keys` on every node once this transaction commits.
    func notify(_ keys: [String], _ connection: PostgresConnection) async throws {
        for key in keys { try await connection.query("SELECT pg_notify(\(Self.pushChannel), \(key))", logger: logger) }
    }

    static func requestKey(_ id: String) -> String { PushChangeKeys.request(id) }
    static func userKey(_ user: String) -> String { PushChangeKeys.user(user) }

    func pushUser(_ user: String, _ connection: PostgresConnection) async throws -> (blocked: Bool, countedUntil: Int64) {
        for try await (blocked, countedUntil) in try await connection.query(
            "SELECT blocked, counted_until FROM push_users WHERE \"user\" = \(user)", logger: logger).decode((Bool, Int64).self) {
            return (blocked, countedUntil)
        }
        return (false, 0)
    }

    /// `Store.holdsFactor`'s rule on PostgreSQL: an active token, a FIDO credential in any
    /// state, or a device in any state but pending (preflight's `holds_factor`).
    func holdsFactor(user: String, _ connection: PostgresConnection) async throws -> Bool {
        try await changed("""
            SELECT 1 FROM tokens WHERE "user" = \(user) AND (state = 'active' OR kind = 'fido')
            UNION ALL SELECT 1 FROM devices WHERE "user" = \(user) AND state <> 'pending' LIMIT 1
            """, connection)
    }

    /// A successful login clears the requests counted against push_limit (PushRate).
    func resetPushCount(_ user: String, _ connection: PostgresConnection) async throws {
        try await connection.query("UPDATE push_users SET counted_until = 0 WHERE \"user\" = \(user) AND counted_until <> 0", logger: logger)
    }

    /// PushUpkeep's sweep: ends pending requests past their expiry (the schema's trigger blanks
    /// their context) and deletes requests a day past it.
    func sweepPushRequests(now: Int64, _ connection: PostgresConnection) async throws -> Int {
        var ended = 0
        for try await _ in try await connection.query(
            "UPDATE push_requests SET state = 'expired' WHERE state = 'pending' AND expires <= \(now) RETURNING 1", logger: logger) { ended += 1 }
        // Kept a day for the record (without their context; the audit log keeps what happened).
        try await connection.query("DELETE FROM push_requests WHERE expires < \(now - PushUpkeepRules.keptSeconds)", logger: logger)
        return ended
    }

    func hasActiveDevice(_ user: String, _ connection: PostgresConnection) async throws -> Bool {
        try await changed("SELECT 1 FROM devices WHERE \"user\" = \(user) AND state = 'active' LIMIT 1", connection)
    }

    /// One failure on the user's row (Lockout.afterFailure), under the user's lock.
    func countPushFailure(user: String, now: Int64, _ connection: PostgresConnection) async throws {
        try await lock(user, connection)
        let read = try await failures(user, connection)
        let policy = settings.policy
        try await apply([.setFailures(key: user, expected: read, to: Lockout.afterFailure(read, deny: policy.deny, unlockTime: policy.unlockTime, now: now),
                                      at: now)], connection)
    }

    // MARK: admins

    public func addDevice(user: String, _ request: DeviceAddRequest, caller: Caller) async throws(ServiceError) -> DeviceAdded {
        let user = try RequestRules.user(user)
        let name = try PushRules.deviceName(request.name)
        let id = try PushRules.newDeviceID()
        let code = try PushRules.newCode()
        guard let normalized = PushRules.normalizedCode(code) else { throw ServiceError(.system, "activation code malformed") }
        let now = self.now()
        let expires = now + pushPolicy.activationLifetime
        let activationURL = try pushPolicy.activationURL(request, code: code)
        try await transaction("adding a device") { connection in
            try await connection.query("""
                INSERT INTO devices (id, "user", name, state, activation_hash, activation_expires, created)
                VALUES (\(id), \(user), \(name), 'pending', \(Self.bytea(PushRules.codeHash(normalized))), \(expires), \(now))
                """, logger: self.logger)
            try await self.append(AuditEntry(caller, "device add", user: user, serial: id, result: "ok", detail: name, time: now), connection)
        }
        return DeviceAdded(device: id, user: user, activationCode: code, expires: expires, activationUrl: activationURL)
    }

    public func devices(user: String?, caller: Caller) async throws(ServiceError) -> DeviceList {
        if let user { _ = try RequestRules.user(user) }
        return try await run("listing devices") { connection in
            let rows = if let user {
                try await connection.query("SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE \"user\" = \(user) ORDER BY created, id", logger: self.logger)
            } else {
                try await connection.query("SELECT \(unescaped: Self.deviceColumns) FROM devices ORDER BY \"user\", created, id", logger: self.logger)
            }
            var devices: [DeviceInfo] = []
            for try await row in rows { devices.append(try Self.deviceRow(row).info) }
            return DeviceList(devices: devices)
        }
    }

    public func removeDevice(user: String, device: String, caller: Caller) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try await transaction("removing a device") { connection in
            guard try await self.changed("DELETE FROM devices WHERE id = \(device) AND \"user\" = \(user) RETURNING 1", connection) else {
                throw ServiceError(.notFound, Self.unknownDevice)
            }
            try await self.append(AuditEntry(caller, "device remove", user: user, serial: device, result: "ok", detail: "", time: self.now()), connection)
        }
    }

    public func unlockCode(user: String, device: String, caller: Caller) async throws(ServiceError) -> DeviceUnlockCode {
        let user = try RequestRules.user(user)
        let code = try PushRules.newCode()
        guard let normalized = PushRules.normalizedCode(code) else { throw ServiceError(.system, "unlock code malformed") }
        let now = self.now()
        let expires = now + pushPolicy.activationLifetime
        try await transaction("issuing an unlock code") { connection in
            guard let row = try await self.device(id: device, connection), row.user == user else { throw ServiceError(.notFound, Self.unknownDevice) }
            guard row.state != "pending" else {
                throw ServiceError(.invalidInput, "device \(device) was never activated; give the user its activation code, or add it again")
            }
            try await connection.query("""
                UPDATE devices SET unlock_hash = \(Self.bytea(PushRules.codeHash(normalized))), unlock_expires = \(expires) WHERE id = \(device)
                """, logger: self.logger)
            try await self.append(AuditEntry(caller, "device unlock-code", user: user, serial: device, result: "ok", detail: "", time: now), connection)
        }
        return DeviceUnlockCode(unlockCode: code, expires: expires)
    }

    public func setCertificate(user: String, device: String, _ request: DeviceCertificateRequest, caller: Caller) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        guard PushRules.isCertificate(request.certificate) else {
            throw ServiceError(.invalidInput, "certificate must be v2:EXPIRES:SIGNATURE or a base64 DER ECDSA signature (securotp device certify)")
        }
        try await transaction("storing a device certificate") { connection in
            guard let row = try await self.device(id: device, connection), row.user == user else { throw ServiceError(.notFound, Self.unknownDevice) }
            guard !row.publicKey.isEmpty else { throw ServiceError(.invalidInput, "device \(device) has no key yet: certify it after activation") }
            try await connection.query("UPDATE devices SET certificate = \(request.certificate) WHERE id = \(device)", logger: self.logger)
            try await self.append(AuditEntry(caller, "device certify", user: user, serial: device, result: "ok", detail: "", time: self.now()), connection)
        }
    }

    public func unblockPush(user: String, caller: Caller) async throws(ServiceError) -> PushUnblocked {
        let user = try RequestRules.user(user)
        return try await transaction("clearing a push block") { connection in
            var was = false
            for try await blocked in try await connection.query(
                "DELETE FROM push_users WHERE \"user\" = \(user) RETURNING blocked", logger: self.logger).decode(Bool.self) { was = blocked }
            try await self.append(AuditEntry(caller, "push unblock", user: user, serial: "", result: "ok",
                                             detail: was ? "was blocked" : "was not blocked", time: self.now()), connection)
            return PushUnblocked(wasBlocked: was)
        }
    }

    // MARK: devices

    public func activateDevice(_ request: DeviceActivationRequest, address: String) async throws(ServiceError) -> DeviceActivated {
        let refused = ServiceError(.unauthorized, "unknown, used or expired activation code; ask your admin for a new one (securotp device add)")
        guard let normalized = PushRules.normalizedCode(request.activationCode) else { throw refused }
        let publicKey = try PushRules.binary(request.publicKey, "public_key", maxBytes: 512)
        guard PushRules.isP256PublicKey(publicKey) else { throw ServiceError(.invalidInput, "public_key must be a P-256 SubjectPublicKeyInfo (DER)") }
        let aaid = try PushRules.aaid(request.aaid)
        let name = try PushRules.deviceName(request.name)
        let policy = pushPolicy
        let pinPolicy = DevicePINPolicy(required: policy.pinRequired, minLength: policy.pinMinLength, maxLength: policy.pinMaxLength)
        // The taken code commits even when it has expired (single use); only then is the refusal thrown.
        let outcome = try await transaction("activating a device") { connection -> Result<DeviceActivated, ServiceError> in
            let now = self.now()
            var taken: PushDeviceRow?
            for try await row in try await connection.query("""
                UPDATE devices SET activation_hash = NULL WHERE activation_hash = \(Self.bytea(PushRules.codeHash(normalized))) AND state = 'pending'
                RETURNING \(unescaped: Self.deviceColumns)
                """, logger: self.logger) { taken = try Self.deviceRow(row) }
            // A code that names no device is audited by securotpd in aggregate (AnonymousMisses),
            // not as a row each: anyone can send them.
            guard let row = taken else { return .failure(refused) }
            guard row.activationExpires > now else {
                try await self.append(AuditEntry(time: now, actorKind: "device", actor: row.id, address: address, action: "device activate",
                                                 user: row.user, serial: row.id, result: "denied", detail: "activation code expired"), connection)
                return .failure(refused)
            }
            let deviceCredential = try PushRules.newCredential(deviceID: row.id)
            let offlineSecret = try PushRules.newOfflineSecret(aaid: aaid)
            let sealedOffline = try offlineSecret.map { (secret) throws(StoreError) in
                try Store.sealDeviceSecret(secret, key: self.keys.dataKey, user: row.user, device: row.id)
            }
            guard try await self.changed("""
                UPDATE devices SET state = 'active', name = \(name.isEmpty ? row.name : name), aaid = \(aaid), public_key = \(Self.bytea(publicKey)),
                    credential_hash = \(Self.bytea(deviceCredential.secretHash)), user_verification = \(request.userVerification ?? false),
                    offline_secret = \(sealedOffline.map(Self.bytea))
                WHERE id = \(row.id) AND state = 'pending' RETURNING 1
                """, connection) else { throw ServiceError(.database, "device \(row.id) changed during activation; try again") }
            try await self.append(AuditEntry(time: now, actorKind: "device", actor: row.id, address: address, action: "device activate",
                                             user: row.user, serial: row.id, result: "ok", detail: aaid), connection)
            return .success(PushRules.activated(device: row.id, user: row.user, credential: deviceCredential.text, pinPolicy: pinPolicy,
                                                offlineSecret: offlineSecret))
        }
        return try outcome.get()
    }

    public func authenticateDevice(credential text: String, address: String) async throws(ServiceError) -> Caller {
        guard let credential = Credential(text: text), credential.kind == .device else { throw AccessRules.refused }
        let id = "dv" + credential.id
        let row = try await run("authenticating a device") { connection in try await self.device(id: id, connection) }
        // Blocked devices still authenticate (to unlock or deregister); each route checks the state it needs.
        guard let row, row.state != "pending", credential.matches(storedHash: row.credentialHash) else { throw AccessRules.refused }
        return Caller(kind: .device, name: row.id, address: address, users: [row.user])
    }

    /// The calling device's row, which must be active (a blocked device answers nothing).
    func activeDevice(_ caller: Caller, _ connection: PostgresConnection) async throws -> PushDeviceRow {
        guard caller.kind == .device, let row = try await device(id: caller.name, connection), row.user == caller.users.first else {
            throw ServiceError(.notFound, PushDecisions.deviceGone)
        }
        guard row.state == "active" else {
            throw ServiceError(.invalidInput, PushDecisions.deviceNotActive(row.state))
        }
        return row
    }

    public func pendingPushes(caller: Caller) async throws(ServiceError) -> DevicePushList {
        try await run("listing push requests") { connection in
            let device = try await self.activeDevice(caller, connection)
            var requests: [DevicePushRequest] = []
            for try await row in try await connection.query("""
                SELECT \(unescaped: Self.requestColumns) FROM push_requests
                WHERE "user" = \(device.user) AND state = 'pending' AND expires > \(self.now()) ORDER BY created, id
                """, logger: self.logger) { requests.append(try Self.requestRow(row).forDevice) }
            return DevicePushList(requests: requests)
        }
    }

    public func answerPush(_ request: DeviceAnswerRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse {
        let answer = try PushDecisions.Answer(request)
        let requireUV = pushPolicy.pinRequired
        let outcome = try await transaction("answering a push request") { connection -> Result<DeviceStateResponse, ServiceError> in
            let now = self.now()
            let device = try await self.activeDevice(caller, connection)
            // Another user's request, or an unknown one: one answer for both.
            guard PushRules.isRequestID(answer.id), let row = try await self.pushRequest(id: answer.id, connection), row.user == device.user else {
                try await self.append(AuditEntry(caller, "push answer", user: device.user, serial: answer.id, result: "denied",
                                                 detail: "no such request for this user", time: now), connection)
                return .failure(ServiceError(.notFound, PushDecisions.unknownAnswered(answer.id)))
            }
            func audit(_ entry: PushDecisions.Audit) async throws {
                try await self.append(AuditEntry(caller, answer.action, user: row.user, serial: row.id, result: entry.result,
                                                 detail: "host \(row.host); \(entry.detail)", time: now), connection)
            }
            func run(_ change: PushDecisions.Change) async throws -> DeviceStateResponse {
                if change.countFailure == .always { try await self.countPushFailure(user: row.user, now: now, connection) }
                var moved = true
                if let to = change.moveTo { moved = try await self.transition(row.id, from: "pending", to: to, connection) }
                if !moved, let lost = change.ifLost {
                    if let entry = lost.audit { try await audit(entry) }
                    return lost.response
                }
                if change.countFailure == .ifMoved { try await self.countPushFailure(user: row.user, now: now, connection) }
                if change.blockUser {
                    try await connection.query("""
                        INSERT INTO push_users ("user", blocked) VALUES (\(row.user), true) ON CONFLICT ("user") DO UPDATE SET blocked = true
                        """, logger: self.logger)
                }
                if let entry = change.audit { try await audit(entry) }
                return change.response
            }
            // Whatever this answer changes ends the host's wait and the user's devices' waits, on every node.
            try await self.notify([Self.requestKey(row.id), Self.userKey(row.user)], connection)
            switch PushDecisions.answer(answer, row: row, device: device, requireUserVerification: requireUV, now: now,
                                        policy: self.pushPolicy) {
            case .respond(let response):
                return .success(response)
            case .change(let change):
                return .success(try await run(change))
            case .countWrongNumber:
                var count = row.wrongNumbers
                for try await value in try await connection.query(
                    "UPDATE push_requests SET wrong_numbers = wrong_numbers + 1 WHERE id = \(row.id) AND state = 'pending' RETURNING wrong_numbers",
                    logger: self.logger).decode(Int64.self) { count = Int(clamping: value) }
                return .success(try await run(PushDecisions.afterWrongNumber(count: count)))
            case .approve(let counter):
                guard PushDecisions.counterAdvances(counter, stored: device.signCounter),
                      try await self.advanceSignCounter(device: device.id, to: counter, now: now, connection) else {
                    return .success(try await run(PushDecisions.counterNotAdvanced))
                }
                guard case .approve(let signed) = answer.kind, try await self.changed("""
                    UPDATE push_requests SET state = 'approved', device = \(device.id), authenticator_data = \(Self.bytea(signed.authenticatorData)),
                        client_data_json = \(Self.bytea(signed.clientDataJSON)), signature = \(Self.bytea(signed.signature))
                    WHERE id = \(row.id) AND state = 'pending' RETURNING 1
                    """, connection) else {
                    return .success(DeviceStateResponse(state: try await self.pushRequest(id: row.id, connection)?.state ?? "failed"))
                }
                let approved = PushDecisions.approved(by: device)
                try await audit(approved.audit)
                return .success(approved.response)
            }
        }
        return try outcome.get()
    }

    public func blockDevice(caller: Caller) async throws(ServiceError) {
        try await transaction("blocking a device") { connection in
            guard caller.kind == .device, let row = try await self.device(id: caller.name, connection) else { throw ServiceError(.notFound, "no such device") }
            try await connection.query("UPDATE devices SET state = 'blocked' WHERE id = \(row.id) AND state = 'active'", logger: self.logger)
            try await self.append(AuditEntry(caller, "device blocked", user: row.user, serial: row.id, result: "ok",
                                             detail: "the device blocked itself (wrong PINs)", time: self.now()), connection)
        }
    }

    public func unlockDevice(_ request: DeviceUnlockRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse {
        let refused = ServiceError(.invalidInput, "unknown, used or expired unlock code; ask your admin for a new one (securotp device unlock-code)")
        let normalized = PushRules.normalizedCode(request.unlockCode)
        let outcome = try await transaction("unlocking a device") { connection -> Result<DeviceStateResponse, ServiceError> in
            let now = self.now()
            guard caller.kind == .device, let row = try await self.device(id: caller.name, connection) else { throw ServiceError(.notFound, "no such device") }
            guard row.state == "blocked" else { return .success(DeviceStateResponse(state: row.state)) }
            if let normalized, row.unlockExpires > now, try await self.changed("""
                UPDATE devices SET state = 'active', unlock_hash = NULL, unlock_expires = 0
                WHERE id = \(row.id) AND state = 'blocked' AND unlock_hash = \(Self.bytea(PushRules.codeHash(normalized))) RETURNING 1
                """, connection) {
                try await self.append(AuditEntry(caller, "device unlock", user: row.user, serial: row.id, result: "ok", detail: "", time: now), connection)
                return .success(DeviceStateResponse(state: "active"))
            }
            // A wrong or expired code spends the one that was issued (single use, no guessing).
            try await connection.query("UPDATE devices SET unlock_hash = NULL, unlock_expires = 0 WHERE id = \(row.id)", logger: self.logger)
            try await self.append(AuditEntry(caller, "device unlock", user: row.user, serial: row.id, result: "denied",
                                             detail: "wrong or expired unlock code", time: now), connection)
            return .failure(refused)
        }
        return try outcome.get()
    }

    public func deregisterDevice(caller: Caller) async throws(ServiceError) {
        try await transaction("removing a device") { connection in
            guard caller.kind == .device, let user = caller.users.first,
                  try await self.changed("DELETE FROM devices WHERE id = \(caller.name) AND \"user\" = \(user) RETURNING 1", connection) else {
                throw ServiceError(.notFound, "no such device")
            }
            try await self.append(AuditEntry(caller, "device remove", user: user, serial: caller.name, result: "ok", detail: "from the device",
                                             time: self.now()), connection)
        }
    }

    // MARK: hosts

    public func pushAvailable(user: String) async throws(ServiceError) -> Bool {
        let user = try RequestRules.user(user)
        return try await run("checking push approval") { connection in
            guard try await self.hasActiveDevice(user, connection) else { return false }
            return try await !self.pushUser(user, connection).blocked
        }
    }

    public func openPush(_ request: PushOpenRequest, caller: Caller) async throws(ServiceError) -> PushOpened {
        let user = try RequestRules.user(request.user)
        let nonce = try PushRules.nonce(request.nonce)
        let number = try PushRules.number(request.number)
        let service = try PushRules.context(request.service, "service", maxBytes: 64)
        let remote = try PushRules.context(request.remoteAddress, "remote_address", maxBytes: 256)
        let tty = try PushRules.context(request.tty, "tty", maxBytes: 64)
        let command = try PushRules.context(request.command, "command", maxBytes: 1024)
        let id = try PushRules.newRequestID()
        let policy = pushPolicy
        let outcome = try await transaction("opening a push request") { connection -> Result<PushOpened, ServiceError> in
            let now = self.now()
            func refuse(_ reason: String, _ message: String) async throws -> Result<PushOpened, ServiceError> {
                try await self.append(AuditEntry(caller, "push", user: user, serial: "", result: "denied", detail: reason, time: now), connection)
                return .failure(ServiceError(.conflict, message))
            }
            guard try await self.hasActiveDevice(user, connection) else {
                let refusal = PushDecisions.noActiveDevice(user: user)
                return try await refuse(refusal.reason, refusal.message)
            }
            // The limit counts across nodes: one open at a time per user.
            try await self.lock(user, connection)
            let state = try await self.pushUser(user, connection)
            let admission = PushRate(policy).admit(countedUntil: state.countedUntil, now: now)
            if let refusal = PushDecisions.openRefusal(user: user, blocked: state.blocked, admission: admission,
                                                       locked: try await self.failures(user, connection).isLocked(at: now), policy: policy) {
                return try await refuse(refusal.reason, refusal.message)
            }
            var cancelled: [String] = []
            for try await previous in try await connection.query("""
                UPDATE push_requests SET state = 'cancelled' WHERE "user" = \(user) AND host = \(caller.name) AND state = 'pending' RETURNING id
                """, logger: self.logger).decode(String.self) { cancelled.append(previous) }
            // Requests are kept a day past their expiry (the sweep; the audit log keeps what
            // happened). Ending expired ones is the sweep's alone: done here, under the user's
            // lock, two nodes' openings could update other users' rows in opposite orders.
            try await connection.query("DELETE FROM push_requests WHERE expires < \(now - PushUpkeepRules.keptSeconds)", logger: self.logger)
            let expires = now + policy.requestLifetime
            try await connection.query("""
                INSERT INTO push_requests (id, "user", host, service, remote_address, tty, command, nonce, number, created, expires, state)
                VALUES (\(id), \(user), \(caller.name), \(service), \(remote), \(tty), \(command), \(nonce), \(number), \(now), \(expires), 'pending')
                """, logger: self.logger)
            if case .allowed(let countedUntil) = admission {
                try await connection.query("""
                    INSERT INTO push_users ("user", counted_until) VALUES (\(user), \(countedUntil))
                    ON CONFLICT ("user") DO UPDATE SET counted_until = excluded.counted_until
                    """, logger: self.logger)
            }
            try await self.append(AuditEntry(caller, "push", user: user, serial: id, result: "ok",
                                             detail: PushDecisions.openedDetail(service: service, cancelledEarlier: !cancelled.isEmpty), time: now),
                                  connection)
            try await self.notify([Self.userKey(user)] + cancelled.map(Self.requestKey), connection)
            let offline = try await self.changed("""
                SELECT 1 FROM devices WHERE "user" = \(user) AND state = 'active' AND length(offline_secret) > 0 LIMIT 1
                """, connection)
            return .success(PushOpened(id: id, expires: expires, host: caller.name, offline: offline ? true : nil))
        }
        return try outcome.get()
    }

    /// The host's own request, or `not_found` (unknown and other hosts' ids alike).
    func hostRequest(_ id: String, caller: Caller, _ connection: PostgresConnection) async throws -> PushRequestRow {
        guard PushRules.isRequestID(id), let row = try await pushRequest(id: id, connection), row.host == caller.name else {
            throw ServiceError(.notFound, PushDecisions.unknownHostRequest(id))
        }
        return row
    }

    public func pushStatus(id: String, caller: Caller) async throws(ServiceError) -> PushStatus {
        try await transaction("reading a push request") { connection in
            let now = self.now()
            let row = try await self.hostRequest(id, caller: caller, connection)
            switch PushDecisions.status(row, now: now) {
            case .report(let status):
                return status
            case .expire(let status):
                _ = try await self.transition(row.id, from: "pending", to: "expired", connection)
                return status
            case .handOut(let lost):
                // Handed out once, by whichever node's call moves it to consumed.
                guard try await self.transition(row.id, from: "approved", to: "consumed", connection) else { return lost }
                let handed = PushDecisions.handOut(row, device: try await self.device(id: row.device, connection), policy: self.pushPolicy)
                if let entry = handed.audit {
                    try await self.append(AuditEntry(caller, "push wait", user: row.user, serial: row.id, result: entry.result, detail: entry.detail,
                                                     time: now), connection)
                }
                return handed.status
            }
        }
    }

    public func pushResult(_ request: PushResultRequest, caller: Caller) async throws(ServiceError) {
        try await transaction("recording a push result") { connection in
            let now = self.now()
            let row = try await self.hostRequest(request.id, caller: caller, connection)
            guard try await self.changed("""
                UPDATE push_requests SET result = \(request.accepted ? "accepted" : "refused")
                WHERE id = \(row.id) AND host = \(caller.name) AND state = 'consumed' AND result = '' RETURNING 1
                """, connection) else {
                throw ServiceError(.invalidInput, PushDecisions.noResultAwaited(row))
            }
            if request.accepted {
                try await self.resetPushCount(row.user, connection)
                try await self.lock(row.user, connection)
                let state = try await self.failures(row.user, connection)
                if Lockout.successClears(state, now: now) { try await self.apply([.clearFailures(key: row.user, expected: state)], connection) }
            } else {
                try await self.countPushFailure(user: row.user, now: now, connection)
            }
            let entry = PushDecisions.result(row, accepted: request.accepted, reason: request.reason)
            try await self.append(AuditEntry(caller, "push result", user: row.user, serial: row.id, result: entry.result, detail: entry.detail, time: now),
                                  connection)
            try await self.notify([Self.requestKey(row.id)], connection)
        }
    }

    public func cancelPush(_ request: PushCancelRequest, caller: Caller) async throws(ServiceError) -> PushStatus {
        try await transaction("cancelling a push request") { connection in
            let row = try await self.hostRequest(request.id, caller: caller, connection)
            guard try await self.transition(row.id, from: "pending", to: "cancelled", connection) else { return PushDecisions.cancelled(row, moved: false) }
            try await self.append(AuditEntry(caller, "push cancel", user: row.user, serial: row.id, result: "ok", detail: "", time: self.now()), connection)
            try await self.notify([Self.requestKey(row.id), Self.userKey(row.user)], connection)
            return PushDecisions.cancelled(row, moved: true)
        }
    }

    public func verifyOffline(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse? {
        guard let pushID = request.pushId else { return nil }
        let user = try RequestRules.user(request.user)
        return try await transaction("checking an offline push response") { connection -> VerifyResponse? in
            let now = self.now()
            // Another host's or user's request, or an unknown id: the answer is only a passcode.
            guard PushRules.isRequestID(pushID), let row = try await self.pushRequest(id: pushID, connection), row.host == caller.name,
                  row.user == user, row.state == "pending" else { return nil }
            guard row.expires > now else {
                if try await self.transition(row.id, from: "pending", to: "expired", connection) {
                    try await self.notify([Self.requestKey(row.id), Self.userKey(row.user)], connection)
                }
                return nil
            }
            var devices: [PushDeviceRow] = []
            if PushRules.mayBeOfflineResponse(request), try await !self.failures(user, connection).isLocked(at: now) {
                for try await device in try await connection.query(
                    "SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE \"user\" = \(user) ORDER BY created, id", logger: self.logger) {
                    devices.append(try Self.deviceRow(device))
                }
            }
            let match = PushRules.offlineMatch(request.passcode, challenge: row.offlineChallenge, devices: devices) { device in
                Store.openDeviceSecret(device.offlineSecret, key: self.keys.dataKey, user: user, device: device.id)
            }
            guard let device = match else {
                if try await self.transition(row.id, from: "pending", to: "cancelled", connection) {
                    try await self.append(AuditEntry(caller, "push cancel", user: row.user, serial: row.id, result: "ok",
                                                     detail: "answered with a passcode", time: now), connection)
                    try await self.notify([Self.requestKey(row.id), Self.userKey(row.user)], connection)
                }
                return nil
            }
            // Whichever node moves it first wins; a second answer with the same response is a passcode.
            guard try await self.changed("""
                UPDATE push_requests SET state = 'consumed', device = \(device), result = 'offline'
                WHERE id = \(row.id) AND state = 'pending' RETURNING 1
                """, connection) else { return nil }
            try await connection.query("UPDATE devices SET last_used = \(now) WHERE id = \(device)", logger: self.logger)
            try await self.resetPushCount(user, connection)
            try await self.lock(user, connection)
            let state = try await self.failures(user, connection)
            if Lockout.successClears(state, now: now) { try await self.apply([.clearFailures(key: user, expected: state)], connection) }
            try await self.append(AuditEntry(caller, "push offline", user: user, serial: row.id, result: "accept",
                                             detail: "offline response of device \(device)", time: now), connection)
            try await self.notify([Self.requestKey(row.id), Self.userKey(row.user)], connection)
            return PushRules.offlineAccepted(device: device)
        }
    }

    // MARK: upkeep (PushUpkeep)

    public func loginSucceeded(user: String) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try await run("clearing the push limit") { connection in try await self.resetPushCount(user, connection) }
    }

    public func sweepPushRequests(now: Int64) async throws(ServiceError) -> Int {
        try await run("sweeping push requests") { connection in try await self.sweepPushRequests(now: now, connection) }
    }

    // MARK: the change feed

    /// One connection per node LISTENs on `securotp_push` for as long as the service runs, and
    /// hands each payload (a waiter key) to `handler`. No polling: a lost connection is opened
    /// again after a second, and a wait whose notification was lost ends at its own bound and
    /// reads the state again.
    public func followPushChanges(_ handler: @escaping @Sendable (String) async -> Void) {
        pushFeed.start { [client, logger] in
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: Self.pushChannel) { notifications in
                            for try await notification in notifications { await handler(notification.payload) }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    logger.warning("push notifications: listening failed; listening again in a second", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}

/// The listening task of PushChangeFeed: one at a time, cancelled when the service closes.
final class PushFeedTask: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Void, Never>?

    func start(_ body: @escaping @Sendable () async -> Void) {
        lock.withLock {
            task?.cancel()
            task = Task { await body() }
        }
    }

    func stop() async {
        let running = lock.withLock { () -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        running?.cancel()
        _ = await running?.value
    }
}
