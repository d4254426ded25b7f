import SecurOTPCore
import SecurOTPStore

/// Push approval on the SQLite store (docs/push.md). Each call is one transaction with its audit
/// entries; a refusal that must be counted (a wrong number, a bad signature) returns normally so
/// that its writes commit.
extension LocalTokenService: DeviceService {
    private func runPush<R: Sendable>(_ body: @escaping (Store, PushTables, AccessTables) throws(ServiceError) -> R) async throws(ServiceError) -> R {
        try await runService { (store, access) throws(ServiceError) -> R in try body(store, PushTables(db: store.database), access) }
    }

    private static func call<R>(_ body: () throws(StoreError) -> R) throws(ServiceError) -> R { try storeCall(body) }

    static let unknownDevice = "no such device for this user; see: securotp device list"

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
            let now = Self.now()
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
                try access.append(AuditEntry(caller, "device remove", user: user, serial: device, result: "ok", detail: "", time: Self.now()))
            }
        }
    }

    public func unlockCode(user: String, device: String, caller: Caller) async throws(ServiceError) -> DeviceUnlockCode {
        let user = try RequestRules.user(user)
        let code = try PushRules.newCode()
        guard let normalized = PushRules.normalizedCode(code) else { throw ServiceError(.system, "unlock code malformed") }
        let lifetime = pushPolicy.activationLifetime
        return try await runPush { (_, push, access) throws(ServiceError) in
            let now = Self.now()
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
        guard !request.certificate.isEmpty, request.certificate.utf8.count <= 256,
              let signature = PushRules.base64URLDecode(request.certificate), (8...80).contains(signature.count) else {
            throw ServiceError(.invalidInput, "certificate must be a base64 DER ECDSA signature (securotp device certify)")
        }
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                guard let row = try push.device(id: device), row.user == user else { throw StoreError(.notFound, Self.unknownDevice) }
                guard !row.publicKey.isEmpty else { throw StoreError(.invalidInput, "device \(device) has no key yet: certify it after activation") }
                try push.setCertificate(id: device, certificate: request.certificate)
                try access.append(AuditEntry(caller, "device certify", user: user, serial: device, result: "ok", detail: "", time: Self.now()))
            }
        }
    }

    public func unblockPush(user: String, caller: Caller) async throws(ServiceError) -> PushUnblocked {
        let user = try RequestRules.user(user)
        return try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                let was = try push.unblock(user: user)
                try access.append(AuditEntry(caller, "push unblock", user: user, serial: "", result: "ok",
                                             detail: was ? "was blocked" : "was not blocked", time: Self.now()))
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
        let outcome = try await runPush { (_, push, access) throws(ServiceError) -> Result<DeviceActivated, ServiceError> in
            let now = Self.now()
            return try Self.call { () throws(StoreError) -> Result<DeviceActivated, ServiceError> in
                guard let row = try push.takeActivation(hash: PushRules.codeHash(normalized)) else {
                    try access.append(AuditEntry(time: now, actorKind: "device", actor: "", address: address, action: "device activate",
                                                 user: "", serial: "", result: "denied", detail: "unknown or used activation code"))
                    return .failure(refused)
                }
                guard row.activationExpires > now else {
                    try access.append(AuditEntry(time: now, actorKind: "device", actor: row.id, address: address, action: "device activate",
                                                 user: row.user, serial: row.id, result: "denied", detail: "activation code expired"))
                    return .failure(refused)
                }
                let credential: Credential
                do throws(ServiceError) { credential = try PushRules.newCredential(deviceID: row.id) } catch { return .failure(error) }
                try push.activate(id: row.id, name: name.isEmpty ? row.name : name, aaid: aaid, publicKey: publicKey,
                                  credentialHash: credential.secretHash, userVerification: request.userVerification ?? false)
                try access.append(AuditEntry(time: now, actorKind: "device", actor: row.id, address: address, action: "device activate",
                                             user: row.user, serial: row.id, result: "ok", detail: aaid))
                return .success(DeviceActivated(device: row.id, user: row.user, credential: credential.text, pinPolicy: pinPolicy))
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
            throw StoreError(.notFound, "this device is no longer registered; activate it again")
        }
        guard row.state == "active" else {
            throw StoreError(.invalidInput, "this device is \(row.state); unlock it with the code from: securotp device unlock-code")
        }
        return row
    }

    public func pendingPushes(caller: Caller) async throws(ServiceError) -> DevicePushList {
        try await runPush { (_, push, _) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                let row = try Self.activeDevice(push, caller)
                return DevicePushList(requests: try push.pendingRequests(user: row.user, now: Self.now()).map(\.forDevice))
            }
        }
    }

    public func answerPush(_ request: DeviceAnswerRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse {
        guard ["approve", "deny", "fraud"].contains(request.decision) else {
            throw ServiceError(.invalidInput, "decision must be approve, deny or fraud")
        }
        var approval: (authenticatorData: [UInt8], clientDataJSON: [UInt8], signature: [UInt8], number: String)?
        if request.decision == "approve" {
            approval = (try PushRules.binary(request.authenticatorData, "authenticator_data", maxBytes: 37),
                        try PushRules.binary(request.clientDataJson, "client_data_json", maxBytes: 1024),
                        try PushRules.binary(request.signature, "signature", maxBytes: 80),
                        try PushRules.number(request.number ?? ""))
        }
        let policy = settings.policy
        let requireUV = pushPolicy.pinRequired
        return try await runPush { (store, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> DeviceStateResponse in
                let now = Self.now()
                let device = try Self.activeDevice(push, caller)
                // Another user's request, or an unknown one: one answer for both.
                guard PushRules.isRequestID(request.id), let row = try push.request(id: request.id), row.user == device.user else {
                    try access.append(AuditEntry(caller, "push answer", user: device.user, serial: request.id, result: "denied",
                                                 detail: "no such request for this user", time: now))
                    throw StoreError(.notFound, "no pending push request \(TerminalText.quoted(request.id)) for this user")
                }
                func audit(_ result: String, _ detail: String) throws(StoreError) {
                    try access.append(AuditEntry(caller, "push \(request.decision)", user: row.user, serial: row.id, result: result,
                                                 detail: "host \(row.host); \(detail)", time: now))
                }
                guard row.state == "pending" else { return DeviceStateResponse(state: row.state, reason: "the request is no longer pending") }
                guard row.expires > now else {
                    _ = try push.transition(id: row.id, from: "pending", to: "expired")
                    return DeviceStateResponse(state: "expired", reason: "the request expired")
                }
                switch request.decision {
                case "deny", "fraud":
                    guard try push.transition(id: row.id, from: "pending", to: "denied") else { return DeviceStateResponse(state: "denied") }
                    try Self.countFailure(store, user: row.user, policy: policy, now: now)
                    if request.decision == "fraud" {
                        try push.block(user: row.user)
                        try audit("fraud", "user reported the login as not theirs; pushes blocked until: securotp device unblock-push \(row.user)")
                    } else {
                        try audit("denied", "device \(device.id)")
                    }
                    return DeviceStateResponse(state: "denied")
                default:
                    guard let approval else { throw StoreError(.invalidInput, "approve needs the signed answer") }
                    guard ConstantTime.equal(Array(approval.number.utf8), Array(row.number.utf8)) else {
                        let count = try push.countWrongNumber(id: row.id, expected: row.wrongNumbers) ?? row.wrongNumbers
                        try Self.countFailure(store, user: row.user, policy: policy, now: now)
                        if count >= PushPolicy.wrongNumbersToFail, try push.transition(id: row.id, from: "pending", to: "failed") {
                            try audit("failed", "wrong number \(count) times")
                            return DeviceStateResponse(state: "failed", reason: "wrong number")
                        }
                        try audit("reject", "wrong number (\(count) of \(PushPolicy.wrongNumbersToFail))")
                        return DeviceStateResponse(state: "pending", reason: "wrong number")
                    }
                    let check = PushRules.checkApproval(statement: row.statement(device: device.id), publicKey: device.publicKey,
                                                        authenticatorData: approval.authenticatorData, clientDataJSON: approval.clientDataJSON,
                                                        signature: approval.signature, requireUserVerification: requireUV,
                                                        webOrigin: self.pushPolicy.webOrigin(aaid: device.aaid))
                    switch check {
                    case .refused(let reason):
                        try Self.countFailure(store, user: row.user, policy: policy, now: now)
                        _ = try push.transition(id: row.id, from: "pending", to: "failed")
                        try audit("reject", reason)
                        return DeviceStateResponse(state: "failed", reason: reason)
                    case .verified(let counter, _):
                        guard counter == 0 || Int64(counter) > device.signCounter else {
                            try Self.countFailure(store, user: row.user, policy: policy, now: now)
                            _ = try push.transition(id: row.id, from: "pending", to: "failed")
                            try audit("reject", "signature counter did not advance (cloned device?)")
                            return DeviceStateResponse(state: "failed", reason: "signature counter did not advance")
                        }
                        guard try push.approve(id: row.id, device: device.id, authenticatorData: approval.authenticatorData,
                                               clientDataJSON: approval.clientDataJSON, signature: approval.signature) else {
                            return DeviceStateResponse(state: try push.request(id: row.id)?.state ?? "failed")
                        }
                        try push.recordUse(id: device.id, counter: Int64(counter), now: now)
                        try audit("ok", "device \(device.id)")
                        return DeviceStateResponse(state: "approved")
                    }
                }
            }
        }
    }

    /// A denial, a wrong number or a refused signature: one failure on the user's row, locking at
    /// `deny` as a wrong passcode does (Lockout, docs/design.md "Where lockout is decided").
    static func countFailure(_ store: Store, user: String, policy: VerifyPolicy, now: Int64) throws(StoreError) {
        let read = try store.userState(user)
        try store.apply([.setFailures(key: user, expected: read, to: PushRules.oneMoreFailure(read, deny: policy.deny, unlockTime: policy.unlockTime, now: now), at: now)])
    }

    public func blockDevice(caller: Caller) async throws(ServiceError) {
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                guard caller.kind == .device, let row = try push.device(id: caller.name) else { throw StoreError(.notFound, "no such device") }
                _ = try push.setState(id: row.id, from: "active", to: "blocked")
                try access.append(AuditEntry(caller, "device blocked", user: row.user, serial: row.id, result: "ok",
                                             detail: "the device blocked itself (wrong PINs)", time: Self.now()))
            }
        }
    }

    public func unlockDevice(_ request: DeviceUnlockRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse {
        let refused = StoreError(.invalidInput, "unknown, used or expired unlock code; ask your admin for a new one (securotp device unlock-code)")
        let normalized = PushRules.normalizedCode(request.unlockCode)
        let outcome = try await runPush { (_, push, access) throws(ServiceError) -> Result<DeviceStateResponse, ServiceError> in
            try Self.call { () throws(StoreError) -> Result<DeviceStateResponse, ServiceError> in
                let now = Self.now()
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
                try access.append(AuditEntry(caller, "device remove", user: user, serial: caller.name, result: "ok", detail: "from the device", time: Self.now()))
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
                let now = Self.now()
                func refuse(_ reason: String, _ message: String) throws(StoreError) -> Result<PushOpened, ServiceError> {
                    try access.append(AuditEntry(caller, "push", user: user, serial: "", result: "denied", detail: reason, time: now))
                    return .failure(ServiceError(.conflict, message))
                }
                guard try push.hasActiveDevice(user: user) else { return try refuse("no active device", "\(user) has no active device for push approval") }
                let state = try push.pushUser(user)
                if state.blocked {
                    return try refuse("pushes blocked (deny --fraud)", "push approval is blocked for \(user) after a fraud report; an admin clears it: securotp device unblock-push \(user)")
                }
                if policy.limit > 0, state.sinceSuccess >= policy.limit {
                    return try refuse("push_limit \(policy.limit) reached", "too many push requests for \(user) since the last successful one (push_limit \(policy.limit)); use a passcode")
                }
                if try store.userState(user).isLocked(at: now) { return try refuse("user locked", "\(user) is locked after repeated failures") }
                let cancelled = try push.cancelOpen(user: user, host: caller.name)
                let row = PushTables.RequestRow(id: id, user: user, host: caller.name, service: service, remoteAddress: remote, tty: tty, command: command,
                                                nonce: nonce, number: number, created: now, expires: now + policy.requestLifetime, state: "pending",
                                                wrongNumbers: 0, device: "", authenticatorData: [], clientDataJSON: [], signature: [], result: "")
                try push.insert(row)
                try push.countRequest(user: user)
                try access.append(AuditEntry(caller, "push", user: user, serial: id, result: "ok",
                                             detail: "service \(service)" + (cancelled > 0 ? "; cancelled the host's earlier request" : ""), time: now))
                return .success(PushOpened(id: id, expires: row.expires, host: caller.name))
            }
        }
        return try outcome.get()
    }

    /// The host's own request, or `not_found` (unknown and other hosts' ids alike).
    private static func hostRequest(_ push: PushTables, id: String, caller: Caller) throws(StoreError) -> PushTables.RequestRow {
        guard PushRules.isRequestID(id), let row = try push.request(id: id), row.host == caller.name else {
            throw StoreError(.notFound, "no push request \(TerminalText.quoted(id)) from this host")
        }
        return row
    }

    public func pushStatus(id: String, caller: Caller) async throws(ServiceError) -> PushStatus {
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> PushStatus in
                let now = Self.now()
                let row = try Self.hostRequest(push, id: id, caller: caller)
                switch row.state {
                case "pending" where row.expires <= now:
                    _ = try push.transition(id: row.id, from: "pending", to: "expired")
                    return PushStatus(id: row.id, state: "expired", expires: row.expires)
                case "approved":
                    // Handed out once: only the call that moves it to consumed returns the approval.
                    guard try push.transition(id: row.id, from: "approved", to: "consumed") else {
                        return PushStatus(id: row.id, state: "consumed", expires: row.expires)
                    }
                    guard let device = try push.device(id: row.device), device.user == row.user, device.state == "active" else {
                        try access.append(AuditEntry(caller, "push wait", user: row.user, serial: row.id, result: "reject",
                                                     detail: "the approving device is gone or blocked", time: now))
                        return PushStatus(id: row.id, state: "failed", expires: row.expires)
                    }
                    return PushStatus(id: row.id, state: "consumed", expires: row.expires, approval: row.approval(by: device, origin: self.pushPolicy.webOrigin(aaid: device.aaid)))
                default:
                    return PushStatus(id: row.id, state: row.state, expires: row.expires)
                }
            }
        }
    }

    public func pushResult(_ request: PushResultRequest, caller: Caller) async throws(ServiceError) {
        let reason = TerminalText.bounded(TerminalText.escaped(request.reason ?? ""), maxBytes: 200)
        let policy = settings.policy
        try await runPush { (store, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) in
                let now = Self.now()
                let row = try Self.hostRequest(push, id: request.id, caller: caller)
                guard try push.recordResult(id: row.id, host: caller.name, result: request.accepted ? "accepted" : "refused") else {
                    throw StoreError(.invalidInput, "push request \(row.id) has no approval awaiting a result (state \(row.state))")
                }
                if request.accepted {
                    try push.resetCount(user: row.user)
                    let state = try store.userState(row.user)
                    if state != .clear { try store.apply([.clearFailures(key: row.user, expected: state)]) }
                    try access.append(AuditEntry(caller, "push result", user: row.user, serial: row.id, result: "accept", detail: "device \(row.device)", time: now))
                } else {
                    try Self.countFailure(store, user: row.user, policy: policy, now: now)
                    try access.append(AuditEntry(caller, "push result", user: row.user, serial: row.id, result: "reject",
                                                 detail: "the host refused the approval: \(reason)", time: now))
                }
            }
        }
    }

    public func cancelPush(_ request: PushCancelRequest, caller: Caller) async throws(ServiceError) -> PushStatus {
        try await runPush { (_, push, access) throws(ServiceError) in
            try Self.call { () throws(StoreError) -> PushStatus in
                let row = try Self.hostRequest(push, id: request.id, caller: caller)
                guard try push.transition(id: row.id, from: "pending", to: "cancelled") else {
                    return PushStatus(id: row.id, state: row.state, expires: row.expires)
                }
                try access.append(AuditEntry(caller, "push cancel", user: row.user, serial: row.id, result: "ok", detail: "", time: Self.now()))
                return PushStatus(id: row.id, state: "cancelled", expires: row.expires)
            }
        }
    }
}
