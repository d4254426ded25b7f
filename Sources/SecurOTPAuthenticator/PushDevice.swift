import Foundation
import SecurOTPCore

/// One push request as the validator shows it to the device (never with the number).
public struct PendingPush: Sendable, Equatable {
    public let id: String
    public let user: String
    public let host: String
    public let service: String
    public let remoteAddress: String
    public let tty: String
    public let command: String
    public let nonce: String
    /// Unix seconds.
    public let expires: Int64

    /// Strings are bounded here (a request is outside data); a request missing a field is
    /// skipped rather than signed with a guess.
    init?(_ object: [String: Any]) {
        func text(_ key: String, max: Int = 1024) -> String? {
            guard let value = object[key] as? String, value.utf8.count <= max else { return nil }
            return value
        }
        guard let id = text("id", max: 64), let user = text("user", max: 256), let host = text("host", max: 256),
              let service = text("service"), let remoteAddress = text("remote_address"), let tty = text("tty"),
              let command = text("command", max: 4096), let nonce = text("nonce", max: 128) else { return nil }
        let expires: Int64
        if let number = object["expires"] as? Int { expires = Int64(number) }
        else if let decimal = object["expires"] as? String, let value = Int64(decimal) { expires = value }
        else { return nil }
        self.id = id
        self.user = user
        self.host = host
        self.service = service
        self.remoteAddress = remoteAddress
        self.tty = tty
        self.command = command
        self.nonce = nonce
        self.expires = expires
    }

    /// The well-formed requests of a `requests` list.
    public static func parse(_ list: [[String: Any]]) -> [PendingPush] { list.compactMap(PendingPush.init) }

    /// The statement this device signs when the user types `number` (docs/push.md).
    public func statement(number: String, device: String) -> PushStatement {
        PushStatement(id: id, user: user, host: host, service: service, remoteAddress: remoteAddress, tty: tty,
                      command: command, nonce: nonce, number: number, expires: String(expires), device: device)
    }
}

/// The device side of push approval: activation, listing, approving and denying requests,
/// unlock and removal, against the validator the store is registered with.
public struct PushDevice {
    public let store: AuthenticatorStore
    public let registration: DeviceRegistration
    public let connection: DeviceConnection

    /// FIDO UAF authenticator id of securotp-authenticator (docs/push.md).
    public static let aaid = DeviceType.authenticator.aaid
    /// The longest a `watch` long-poll asks the validator to hold (seconds).
    public static let longPollSeconds = 25

    public init(store: AuthenticatorStore) throws(AuthenticatorError) {
        let registration = try store.requireDevice()
        self.store = store
        self.registration = registration
        connection = try DeviceConnection(server: registration.server, caFile: registration.caFile)
    }

    /// Registers a new key pair with the activation code. `readPIN` is asked for a new PIN
    /// when the validator's policy requires one (after the validator accepted the code, so a
    /// mistyped code costs no PIN entry). Returns the registration stored.
    public static func activate(store: AuthenticatorStore, code: String, server: String, caFile: String?, name: String,
                                now: Int64, readPIN: (ActivatedPINPolicy) throws -> SecretBytes) throws -> DeviceRegistration {
        if let existing = try store.deviceRegistration() {
            throw AuthenticatorError(.invalidInput, "this store already holds device \(existing.device) of \(TerminalText.quoted(existing.user)) at \(existing.server); remove it first with: securotp-authenticator remove")
        }
        let connection = try DeviceConnection(server: server, caFile: caFile)
        let key = try DeviceSigningKey.generate()
        let answer = try connection.call(.devicesActivate, [
            "activation_code": code, "public_key": Base64.encode(key.publicKey, .url), "name": name,
            "aaid": aaid, "user_verification": true,
        ], credential: nil)
        guard let device = answer["device"] as? String, device.utf8.count <= 64, let user = answer["user"] as? String,
              user.utf8.count <= 256, let credential = answer["credential"] as? String, credential.hasPrefix("sotp_d_"),
              credential.utf8.count <= 512 else {
            throw AuthenticatorError(.unavailable, "the validator at \(connection.server) accepted the code but its answer lacks device, user or credential")
        }
        let policyObject = answer["pin_policy"] as? [String: Any] ?? [:]
        let minimum = (policyObject["min_length"] as? Int) ?? 4
        let maximum = (policyObject["max_length"] as? Int) ?? 8
        guard (1...64).contains(minimum), (minimum...64).contains(maximum) else {
            throw AuthenticatorError(.unavailable, "the validator's PIN policy (\(minimum)–\(maximum) characters) is not usable")
        }
        let policy = ActivatedPINPolicy(required: (policyObject["required"] as? Bool) ?? true, minLength: minimum, maxLength: maximum)
        // Offline approval (docs/push.md): kept only when it is the contract's suite and 32 bytes.
        var offlineSecret: SecretBytes?
        if answer["offline_suite"] as? String == OfflineApproval.suiteText, let text = answer["offline_secret"] as? String,
           let bytes = Base64.decode(text, .url), bytes.count == OfflineApproval.secretLength {
            offlineSecret = SecretBytes(copying: bytes)
        }
        let pin = try policy.required ? readPIN(policy) : nil
        if let pin { try policy.check(newPIN: pin) }
        try store.registerDevice(device: device, user: user, server: connection.server, caFile: caFile, publicKey: key.publicKey,
                                 privateKey: key.privateKey, credential: SecretBytes(copying: Array(credential.utf8)),
                                 pinPolicy: policy, pin: pin, now: now, offlineSecret: offlineSecret)
        return try store.requireDevice()
    }

    /// The user's pending requests; `wait` > 0 long-polls (the validator answers as soon as one
    /// is pending, or after `wait` seconds with none). With `known`, the wait holds while the
    /// pending requests are exactly those and ends when one arrives, is answered, cancelled or expires.
    public func pending(wait: Int = 1, known: [String]? = nil) throws(AuthenticatorError) -> [PendingPush] {
        // securotpd takes `wait` 1–30: a listing with nothing pending costs up to a second.
        var body: [String: Any] = ["wait": min(max(wait, 1), 30)]
        if let known { body["known"] = Array(known.prefix(64)) }
        let answer = try connection.call(.deviceRequests, body, credential: try store.deviceCredential(),
                                         timeoutSeconds: wait + 15)
        guard let list = answer["requests"] as? [[String: Any]] else {
            throw AuthenticatorError(.unavailable, "unexpected answer from the validator at \(connection.server): no requests list")
        }
        return PendingPush.parse(list)
    }

    func refuseWhenBlocked() throws(AuthenticatorError) {
        if try store.requireDevice().blocked {
            throw AuthenticatorError(.refused, "this device is blocked after \(ActivatedPINPolicy.maxFailures) wrong PINs; ask your administrator for an unlock code (securotp device unlock-code) and run: securotp-authenticator unlock CODE")
        }
    }

    /// Approves request `id` with the number the login shows. The PIN is checked first when
    /// the policy requires one (then the answer says UV); three wrong PINs block the device
    /// here and at the validator. Returns the request's state as the validator reports it
    /// (and its reason, e.g. a wrong number).
    public func approve(id: String, number: String, pin: SecretBytes?) throws(AuthenticatorError) -> (state: String, reason: String?) {
        guard number.utf8.count == 6, number.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw AuthenticatorError(.invalidInput, "--number must be the six digits the login shows; got \(TerminalText.quoted(number))")
        }
        try refuseWhenBlocked()
        guard let request = try pending().first(where: { $0.id == id }) else {
            throw AuthenticatorError(.notFound, "no pending request \(TerminalText.quoted(id)) (answered, expired or not yours); see: securotp-authenticator pending")
        }
        var userVerified = false
        if registration.pinPolicy.required {
            guard let pin else { throw AuthenticatorError(.invalidInput, "this device needs its PIN to approve") }
            try verifyPIN(pin)
            userVerified = true
        }
        let approval = try store.signApproval(request.statement(number: number, device: registration.device), userVerified: userVerified)
        let answer = try connection.call(.deviceAnswer, [
            "id": id, "decision": "approve", "number": number,
            "authenticator_data": Base64.encode(approval.authenticatorData, .url),
            "client_data_json": Base64.encode(approval.clientDataJSON, .url),
            "signature": Base64.encode(approval.signature, .url),
        ], credential: try store.deviceCredential())
        return ((answer["state"] as? String) ?? "unknown", answer["reason"] as? String)
    }

    /// The offline response to a challenge the login shows (docs/push.md, "Offline approval"),
    /// without the network: the PIN is checked first when the policy requires one, and counts
    /// towards the block like any other PIN.
    public func respond(challenge typed: String, pin: SecretBytes?) throws(AuthenticatorError) -> String {
        guard let challenge = OfflineApproval.normalizedChallenge(typed) else {
            throw AuthenticatorError(.invalidInput, "the offline challenge is the 8 digits the login shows (e.g. 1234 5678); got \(TerminalText.quoted(typed))")
        }
        try refuseWhenBlocked()
        guard try store.hasOfflineSecret() else {
            throw AuthenticatorError(.missing, "this device has no offline mode (activated before it existed); remove it and activate it again to get one")
        }
        if registration.pinPolicy.required {
            guard let pin else { throw AuthenticatorError(.invalidInput, "this device needs its PIN to answer") }
            try verifyPIN(pin)
        }
        return try store.offlineResponse(challenge: challenge)
    }

    /// Checks the PIN; a wrong one says how many tries are left, the last one blocks the device
    /// here and tells the validator (`POST /v1/device/blocked`).
    public func verifyPIN(_ pin: SecretBytes) throws(AuthenticatorError) {
        switch try store.checkPIN(pin) {
        case .accepted:
            return
        case .wrong(let remaining):
            throw AuthenticatorError(.refused, "wrong PIN; \(remaining) \(remaining == 1 ? "try" : "tries") left before this device blocks")
        case .blocked:
            let told = (try? connection.call(.deviceBlocked, [:], credential: try store.deviceCredential())) != nil
            throw AuthenticatorError(.refused, "wrong PIN \(ActivatedPINPolicy.maxFailures) times: this device is now blocked"
                + (told ? "" : " (the validator could not be told)")
                + "; ask your administrator for an unlock code and run: securotp-authenticator unlock CODE")
        }
    }

    /// Denies request `id`; `fraud` also blocks pushes for the user until an admin clears it.
    public func deny(id: String, fraud: Bool) throws(AuthenticatorError) -> (state: String, reason: String?) {
        try refuseWhenBlocked()
        let answer = try connection.call(.deviceAnswer, ["id": id, "decision": fraud ? "fraud" : "deny"],
                                         credential: try store.deviceCredential())
        return ((answer["state"] as? String) ?? "unknown", answer["reason"] as? String)
    }

    /// Redeems an unlock code, then sets the new PIN (asked only after the validator accepted
    /// the code) and clears the local block.
    public func unlock(code: String, readPIN: (ActivatedPINPolicy) throws -> SecretBytes) throws {
        _ = try connection.call(.deviceUnlock, ["unlock_code": code], credential: try store.deviceCredential())
        let policy = registration.pinPolicy
        let pin = try policy.required ? readPIN(policy) : nil
        if let pin { try policy.check(newPIN: pin) }
        try store.unblockDevice(newPIN: pin)
    }

    /// Deregisters at the validator, then forgets key and credential. A validator that no
    /// longer knows the device (401) is not an obstacle to forgetting it.
    public func remove() throws(AuthenticatorError) -> Bool {
        var known = true
        do throws(AuthenticatorError) {
            _ = try connection.call(.deviceRemove, [:], credential: try store.deviceCredential())
        } catch where error.code == .refused {
            known = false
        }
        try store.forgetDevice()
        return known
    }
}
