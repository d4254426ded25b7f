import SecurOTPCore
import SecurOTPStore

/// Push approval on the SQLite store (docs/push.md). Each call is one transaction with its audit
/// entries; a refusal that must be counted (a wrong number, a bad signature) returns normally so
/// that its writes commit.
extension SQLiteTokenService: DeviceService {
    private func runPush<R: Sendable>(_ body: @escaping (Store, PushTables, AccessTables) throws(ServiceError) -> R) async throws(ServiceError) -> R {
        try await runService { (store, access) throws(ServiceError) -> R in try body(store, PushTables(db: store.database), access) }
    }

    private static func call<R>(_ body: () throws(StoreError) -> R) throws(ServiceError) -> R { try storeCall(body) }

    static let unknownDevice = PushDecisions.unknownDevice

    // MARK: admins

    public func addDevice(user: String, _ request: DeviceAddRequest, caller: Caller) async throws(ServiceError) -> DeviceAdded {
        let user = try RequestRules.user(user)
        let name = try PushRules.deviceName(request.name)
        let id = try PushRules.newDeviceID()
        let code = try PushRules.newCode()
        guard let normalized = PushRules.normalizedCode(code) else { throw ServiceError(.system, "activation code malformed") }
        let lifetime = pushPolicy.activationLifetime
        let activationURL = try pushPolicy.activationURL(request, code: code)
        return try await runPush { (_, push, access) throws(ServiceError) in
            let now = self.now()
            try Self.call { () throws(StoreError) in
                try push.insertDevice(id: id, user: user, name: name, activationHash: PushRules.codeHash(normalized), expires: now + lifetime, now: now)
                try access.append(AuditEntry(caller, "device add", user: user, serial: id, result: "ok", detail: name, time: now))
            }
            return DeviceAdded(device: id, user: user, activationCode: code, expires: now + lifetime, activationUrl: activationURL)
        }
    }

    public func devices(user: String?, caller: Caller) async throws(ServiceError) -> DeviceList {
        if let user { _ = try RequestRules.user(user) }
        return try await runPush { (_, push, _) throws(ServiceError) in
            DeviceList(devices: try Self.call { () throws(StoreError) in try push.devices(user: user).map(\.info) })
        }
    }

    public func removeDevice(user: String, device: String, caller: Caller) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                guard try push.deleteDevice(id: device, user: user) else { throw StoreError(.notFound, Self.unknownDevice) }
                try access.append(AuditEntry(caller, "device remove", user: user, serial: device, result: "ok", detail: "", time: self.now()))
            }
        }
    }

    public func unlockCode(user: String, device: String, caller: Caller) async throws(ServiceError) -> DeviceUnlockCode {
        let user = try RequestRules.user(user)
        let code = try PushRules.newCode()
        guard let normalized = PushRules.normalizedCode(code) else { throw ServiceError(.system, "unlock code malformed") }
        let lifetime = pushPolicy.activationLifetime
        return try await runPush { (_, push, access) throws(ServiceError) in
            let now = self.now()
            try Self.call { () throws(StoreError) in
                guard let row = try push.device(id: device), row.user == user else { throw StoreError(.notFound, Self.unknownDevice) }
                guard row.state != "pending" else {
                    throw StoreError(.invalidInput, "device \(device) was never activated; give the user its activation code, or add it again")
                }
                try push.setUnlock(id: device, hash: PushRules.codeHash(normalized), expires: now + lifetime)
                try access.append(AuditEntry(caller, "device unlock-code", user: user, serial: device, result: "ok", detail: "", time: now))
            }
            return DeviceUnlockCode(unlockCode: code, expires: now + lifetime)
        }
    }

    public func setCertificate(user: String, device: String, _ request: DeviceCertificateRequest, caller: Caller) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        guard PushRules.isCertificate(request.certificate) else {
            throw ServiceError(.invalidInput, "certificate must be v2:EXPIRES:SIGNATURE or a base64 DER ECDSA signature (securotp device certify)")
        }
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                guard let row = try push.device(id: device), row.user == user else { throw StoreError(.notFound, Self.unknownDevice) }
                guard !row.publicKey.isEmpty else { throw StoreError(.invalidInput, "device \(device) has no key yet: certify it after activation") }
                try push.setCertificate(id: device, certificate: request.certificate)
                try access.append(AuditEntry(caller, "device certify", user: user, serial: device, result: "ok", detail: "", time: self.now()))
            }
        }
    }

    public func unblockPush(user: String, caller: Caller) async throws(ServiceError) -> PushUnblocked {
        let user = try RequestRules.user(user)
        return try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                let was = try push.unblock(user: user)
                try access.append(AuditEntry(caller, "push unblock", user: user, serial: "", result: "ok",
                                             detail: was ? "was blocked" : "was not blocked", time: self.now()))
                return PushUnblocked(wasBlocked: was)
            }
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
        let offlineSecret = try PushRules.newOfflineSecret(aaid: aaid)
        let outcome = try await runPush { (store, push, access) throws(ServiceError) -> Result<DeviceActivated, ServiceError> in
            let now = self.now()
            return try Self.call { () throws(StoreError) -> Result<DeviceActivated, ServiceError> in
                // A code that names no device is audited by securotpd in aggregate (AnonymousMisses),
                // not as a row each: anyone can send them.
                guard let row = try push.takeActivation(hash: PushRules.codeHash(normalized)) else { return .failure(refused) }
                guard row.activationExpires > now else {
                    try access.append(AuditEntry(time: now, actorKind: "device", actor: row.id, address: address, action: "device activate",
                                                 user: row.user, serial: row.id, result: "denied", detail: "activation code expired"))
                    return .failure(refused)
                }
                let credential: Credential
                do throws(ServiceError) { credential = try PushRules.newCredential(deviceID: row.id) } catch { return .failure(error) }
                try push.activate(id: row.id, name: name.isEmpty ? row.name : name, aaid: aaid, publicKey: publicKey,
                                  credentialHash: credential.secretHash, userVerification: request.userVerification ?? false)
                if let offlineSecret {
                    try push.setOfflineSecret(id: row.id, sealed: store.sealDeviceSecret(offlineSecret, user: row.user, device: row.id))
                }
                try access.append(AuditEntry(time: now, actorKind: "device", actor: row.id, address: address, action: "device activate",
                                             user: row.user, serial: row.id, result: "ok", detail: aaid))
                return .success(PushRules.activated(device: row.id, user: row.user, credential: credential.text, pinPolicy: pinPolicy,
                                                    offlineSecret: offlineSecret))
            }
        }
        return try outcome.get()
    }

    public func authenticateDevice(credential text: String, address: String) async throws(ServiceError) -> Caller {
        guard let credential = Credential(text: text), credential.kind == .device else { throw AccessRules.refused }
        let id = "dv" + credential.id
        let row = try await runPush { (_, push, _) throws(ServiceError) in try Self.call { () throws(StoreError) in try push.device(id: id) } }
        // Blocked devices still authenticate (to unlock or deregister); each route checks the state it needs.
        guard let row, row.state != "pending", credential.matches(storedHash: row.credentialHash) else { throw AccessRules.refused }
        return Caller(kind: .device, name: row.id, address: address, users: [row.user])
    }

    /// The calling device's row, which must be active (a blocked device answers nothing).
    private static func activeDevice(_ push: PushTables, _ caller: Caller) throws(StoreError) -> PushTables.DeviceRow {
        guard caller.kind == .device, let row = try push.device(id: caller.name), row.user == caller.users.first else {
            throw StoreError(.notFound, PushDecisions.deviceGone)
        }
        guard row.state == "active" else {
            throw StoreError(.invalidInput, PushDecisions.deviceNotActive(row.state))
        }
        return row
    }

    public func pendingPushes(caller: Caller) async throws(ServiceError) -> DevicePushList {
        try await runPush { (_, push, _) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                let row = try Self.activeDevice(push, caller)
                return DevicePushList(requests: try push.pendingRequests(user: row.user, now: self.now()).map(\.forDevice))
            }
        }
    }

    public func answerPush(_ request: DeviceAnswerRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse {
        let answer = try PushDecisions.Answer(request)
        let policy = settings.policy
        let requireUV = pushPolicy.pinRequired
        return try await runPush { (store, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> DeviceStateResponse in
                let now = self.now()
                let device = try Self.activeDevice(push, caller)
                // Another user's request, or an unknown one: one answer for both.
                guard PushRules.isRequestID(answer.id), let row = try push.request(id: answer.id), row.user == device.user else {
                    try access.append(AuditEntry(caller, "push answer", user: device.user, serial: answer.id, result: "denied",
                                                 detail: "no such request for this user", time: now))
                    throw StoreError(.notFound, PushDecisions.unknownAnswered(answer.id))
                }
                func audit(_ entry: PushDecisions.Audit) throws(StoreError) {
                    try access.append(AuditEntry(caller, answer.action, user: row.user, serial: row.id, result: entry.result,
                                                 detail: "host \(row.host); \(entry.detail)", time: now))
                }
                func run(_ change: PushDecisions.Change) throws(StoreError) -> DeviceStateResponse {
                    if change.countFailure == .always { try Self.countFailure(store, user: row.user, policy: policy, now: now) }
                    let moved = try change.moveTo.map { (to) throws(StoreError) in try push.transition(id: row.id, from: "pending", to: to) } ?? true
                    if !moved, let lost = change.ifLost {
                        if let entry = lost.audit { try audit(entry) }
                        return lost.response
                    }
                    if change.countFailure == .ifMoved { try Self.countFailure(store, user: row.user, policy: policy, now: now) }
                    if change.blockUser { try push.block(user: row.user) }
                    if let entry = change.audit { try audit(entry) }
                    return change.response
                }
                switch PushDecisions.answer(answer, row: row, device: device, requireUserVerification: requireUV, now: now,
                                            policy: self.pushPolicy) {
                case .respond(let response):
                    return response
                case .change(let change):
                    return try run(change)
                case .countWrongNumber:
                    let count = try push.countWrongNumber(id: row.id, expected: row.wrongNumbers) ?? row.wrongNumbers
                    return try run(PushDecisions.afterWrongNumber(count: count))
                case .approve(let counter):
                    guard PushDecisions.counterAdvances(counter, stored: device.signCounter) else { return try run(PushDecisions.counterNotAdvanced) }
                    guard case .approve(let signed) = answer.kind,
                          try push.approve(id: row.id, device: device.id, authenticatorData: signed.authenticatorData,
                                           clientDataJSON: signed.clientDataJSON, signature: signed.signature) else {
                        return DeviceStateResponse(state: try push.request(id: row.id)?.state ?? "failed")
                    }
                    try push.recordUse(id: device.id, counter: Int64(counter), now: now)
                    let approved = PushDecisions.approved(by: device)
                    try audit(approved.audit)
                    return approved.response
                }
            }
        }
    }

    /// A denial, a wrong number or a refused signature: one failure on the user's row, locking at
    /// `deny` as a wrong passcode does (Lockout, docs/design.md "Where lockout is decided").
    static func countFailure(_ store: Store, user: String, policy: VerifyPolicy, now: Int64) throws(StoreError) {
        let read = try store.userState(user)
        try store.apply([.setFailures(key: user, expected: read, to: Lockout.afterFailure(read, deny: policy.deny, unlockTime: policy.unlockTime, now: now), at: now)])
    }

    public func blockDevice(caller: Caller) async throws(ServiceError) {
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                guard caller.kind == .device, let row = try push.device(id: caller.name) else { throw StoreError(.notFound, "no such device") }
                _ = try push.setState(id: row.id, from: "active", to: "blocked")
                try access.append(AuditEntry(caller, "device blocked", user: row.user, serial: row.id, result: "ok",
                                             detail: "the device blocked itself (wrong PINs)", time: self.now()))
            }
        }
    }

    public func unlockDevice(_ request: DeviceUnlockRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse {
        let refused = StoreError(.invalidInput, "unknown, used or expired unlock code; ask your admin for a new one (securotp device unlock-code)")
        let normalized = PushRules.normalizedCode(request.unlockCode)
        let outcome = try await runPush { (_, push, access) throws(ServiceError) -> Result<DeviceStateResponse, ServiceError> in
            try Self.call { () throws(StoreError) -> Result<DeviceStateResponse, ServiceError> in
                let now = self.now()
                guard caller.kind == .device, let row = try push.device(id: caller.name) else { throw StoreError(.notFound, "no such device") }
                guard row.state == "blocked" else { return .success(DeviceStateResponse(state: row.state)) }
                if let normalized, row.unlockExpires > now, try push.unlock(id: row.id, hash: PushRules.codeHash(normalized)) {
                    try access.append(AuditEntry(caller, "device unlock", user: row.user, serial: row.id, result: "ok", detail: "", time: now))
                    return .success(DeviceStateResponse(state: "active"))
                }
                // A wrong or expired code spends the one that was issued (single use, no guessing).
                if !row.unlockHash.isEmpty { try push.setUnlock(id: row.id, hash: [], expires: 0) }
                try access.append(AuditEntry(caller, "device unlock", user: row.user, serial: row.id, result: "denied", detail: "wrong or expired unlock code", time: now))
                return .failure(ServiceError(refused))
            }
        }
        return try outcome.get()
    }

    public func deregisterDevice(caller: Caller) async throws(ServiceError) {
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                guard caller.kind == .device, let user = caller.users.first, try push.deleteDevice(id: caller.name, user: user) else {
                    throw StoreError(.notFound, "no such device")
                }
                try access.append(AuditEntry(caller, "device remove", user: user, serial: caller.name, result: "ok", detail: "from the device", time: self.now()))
            }
        }
    }

    // MARK: hosts

    public func pushAvailable(user: String) async throws(ServiceError) -> Bool {
        let user = try RequestRules.user(user)
        return try await runPush { (_, push, _) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> Bool in
                guard try push.hasActiveDevice(user: user) else { return false }
                return try !push.pushUser(user).blocked
            }
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
        let outcome = try await runPush { (store, push, access) throws(ServiceError) -> Result<PushOpened, ServiceError> in
            try Self.call { () throws(StoreError) -> Result<PushOpened, ServiceError> in
                let now = self.now()
                func refuse(_ reason: String, _ message: String) throws(StoreError) -> Result<PushOpened, ServiceError> {
                    try access.append(AuditEntry(caller, "push", user: user, serial: "", result: "denied", detail: reason, time: now))
                    return .failure(ServiceError(.conflict, message))
                }
                guard try push.hasActiveDevice(user: user) else {
                    let refusal = PushDecisions.noActiveDevice(user: user)
                    return try refuse(refusal.reason, refusal.message)
                }
                let state = try push.pushUser(user)
                let admission = PushRate(policy).admit(countedUntil: state.countedUntil, now: now)
                if let refusal = PushDecisions.openRefusal(user: user, blocked: state.blocked, admission: admission,
                                                           locked: try store.userState(user).isLocked(at: now), policy: policy) {
                    return try refuse(refusal.reason, refusal.message)
                }
                let cancelled = try push.cancelOpen(user: user, host: caller.name)
                let row = PushTables.RequestRow(id: id, user: user, host: caller.name, service: service, remoteAddress: remote, tty: tty, command: command,
                                                nonce: nonce, number: number, created: now, expires: now + policy.requestLifetime, state: "pending",
                                                wrongNumbers: 0, device: "", authenticatorData: [], clientDataJSON: [], signature: [], result: "")
                try push.insert(row)
                if case .allowed(let countedUntil) = admission { try push.countRequest(user: user, countedUntil: countedUntil) }
                try access.append(AuditEntry(caller, "push", user: user, serial: id, result: "ok",
                                             detail: PushDecisions.openedDetail(service: service, cancelledEarlier: cancelled > 0), time: now))
                return .success(PushOpened(id: id, expires: row.expires, host: caller.name, offline: try push.hasOfflineDevice(user: user) ? true : nil))
            }
        }
        return try outcome.get()
    }

    /// The host's own request, or `not_found` (unknown and other hosts' ids alike).
    private static func hostRequest(_ push: PushTables, id: String, caller: Caller) throws(StoreError) -> PushTables.RequestRow {
        guard PushRules.isRequestID(id), let row = try push.request(id: id), row.host == caller.name else {
            throw StoreError(.notFound, PushDecisions.unknownHostRequest(id))
        }
        return row
    }

    public func pushStatus(id: String, caller: Caller) async throws(ServiceError) -> PushStatus {
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> PushStatus in
                let now = self.now()
                let row = try Self.hostRequest(push, id: id, caller: caller)
                switch PushDecisions.status(row, now: now) {
                case .report(let status):
                    return status
                case .expire(let status):
                    _ = try push.transition(id: row.id, from: "pending", to: "expired")
                    return status
                case .handOut(let lost):
                    guard try push.transition(id: row.id, from: "approved", to: "consumed") else { return lost }
                    let handed = PushDecisions.handOut(row, device: try push.device(id: row.device), policy: self.pushPolicy)
                    if let entry = handed.audit {
                        try access.append(AuditEntry(caller, "push wait", user: row.user, serial: row.id, result: entry.result, detail: entry.detail, time: now))
                    }
                    return handed.status
                }
            }
        }
    }

    public func pushResult(_ request: PushResultRequest, caller: Caller) async throws(ServiceError) {
        let policy = settings.policy
        try await runPush { (store, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                let now = self.now()
                let row = try Self.hostRequest(push, id: request.id, caller: caller)
                guard try push.recordResult(id: row.id, host: caller.name, result: request.accepted ? "accepted" : "refused") else {
                    throw StoreError(.invalidInput, PushDecisions.noResultAwaited(row))
                }
                if request.accepted {
                    try push.resetCount(user: row.user)
                    let state = try store.userState(row.user)
                    if Lockout.successClears(state, now: now) { try store.apply([.clearFailures(key: row.user, expected: state)]) }
                } else {
                    try Self.countFailure(store, user: row.user, policy: policy, now: now)
                }
                let entry = PushDecisions.result(row, accepted: request.accepted, reason: request.reason)
                try access.append(AuditEntry(caller, "push result", user: row.user, serial: row.id, result: entry.result, detail: entry.detail, time: now))
            }
        }
    }

    public func verifyOffline(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse? {
        guard let pushID = request.pushId else { return nil }
        let user = try RequestRules.user(request.user)
        return try await runPush { (store, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> VerifyResponse? in
                let now = self.now()
                // Another host's or user's request, or an unknown id: the answer is only a passcode.
                guard PushRules.isRequestID(pushID), let row = try push.request(id: pushID), row.host == caller.name, row.user == user,
                      row.state == "pending" else { return nil }
                guard row.expires > now else {
                    _ = try push.transition(id: row.id, from: "pending", to: "expired")
                    return nil
                }
                var devices: [PushTables.DeviceRow] = []
                if PushRules.mayBeOfflineResponse(request), try !store.userState(user).isLocked(at: now) {
                    devices = try push.devices(user: user)
                }
                let match = PushRules.offlineMatch(request.passcode, challenge: row.offlineChallenge, devices: devices) { device in
                    store.openDeviceSecret(device.offlineSecret, user: user, device: device.id)
                }
                guard let device = match else {
                    if try push.transition(id: row.id, from: "pending", to: "cancelled") {
                        try access.append(AuditEntry(caller, "push cancel", user: row.user, serial: row.id, result: "ok",
                                                     detail: "answered with a passcode", time: now))
                    }
                    return nil
                }
                // Whoever moves it first wins; a second answer with the same response is a passcode.
                guard try push.takeOffline(id: row.id, device: device) else { return nil }
                try push.recordUse(id: device, counter: 0, now: now)
                try push.resetCount(user: user)
                let state = try store.userState(user)
                if Lockout.successClears(state, now: now) { try store.apply([.clearFailures(key: user, expected: state)]) }
                try access.append(AuditEntry(caller, "push offline", user: user, serial: row.id, result: "accept",
                                             detail: "offline response of device \(device)", time: now))
                return PushRules.offlineAccepted(device: device)
            }
        }
    }

    public func cancelPush(_ request: PushCancelRequest, caller: Caller) async throws(ServiceError) -> PushStatus {
        let (status, user) = try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> (PushStatus, String?) in
                let row = try Self.hostRequest(push, id: request.id, caller: caller)
                guard try push.transition(id: row.id, from: "pending", to: "cancelled") else {
                    return (PushDecisions.cancelled(row, moved: false), nil)
                }
                try access.append(AuditEntry(caller, "push cancel", user: row.user, serial: row.id, result: "ok", detail: "", time: self.now()))
                return (PushDecisions.cancelled(row, moved: true), row.user)
            }
        }
        // After the commit: the user's device waits end and read the list without it.
        if let user { pushChanges.publish([PushChangeKeys.request(status.id), PushChangeKeys.user(user)]) }
        return status
    }
}

extension SQLiteTokenService: PushChangeFeed {
    public func followPushChanges(_ handler: @escaping @Sendable (String) async -> Void) { pushChanges.follow(handler) }
}

extension SQLiteTokenService: PushUpkeep {
    public func loginSucceeded(user: String) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try await runPush { (_, push, _) throws(ServiceError) in try Self.call { () throws(StoreError) in try push.resetCount(user: user) } }
    }

    public func sweepPushRequests(now: Int64) async throws(ServiceError) -> Int {
        try await runPush { (_, push, _) throws(ServiceError) in try Self.call { () throws(StoreError) in try push.sweep(now: now) } }
    }
}
