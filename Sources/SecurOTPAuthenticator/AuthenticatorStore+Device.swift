import SecurOTPCore
import SecurOTPStore

/// What the validator asked of the device's PIN at activation (`pin_policy`).
public struct ActivatedPINPolicy: Sendable, Equatable {
    public var required: Bool
    public var minLength: Int
    public var maxLength: Int
    /// Wrong PINs in a row that block the device (MIRACL's three tries).
    public static let maxFailures = 3

    public init(required: Bool, minLength: Int = 4, maxLength: Int = 8) {
        self.required = required
        self.minLength = minLength
        self.maxLength = maxLength
    }

    /// A new PIN must have between minLength and maxLength characters and no control
    /// characters (it is typed on a terminal).
    public func check(newPIN pin: SecretBytes) throws(AuthenticatorError) {
        let (count, clean) = pin.withUnsafeBytes { bytes -> (Int, Bool) in
            let characters = bytes.reduce(0) { $0 + (($1 & 0xC0) == 0x80 ? 0 : 1) }
            return (characters, !bytes.contains { $0 < 0x20 || $0 == 0x7f })
        }
        guard clean, count >= minLength, count <= maxLength else {
            throw AuthenticatorError(.invalidInput, "the PIN must have \(minLength) to \(maxLength) characters (no control characters); choose another")
        }
    }
}

/// The device's registration with a validator, without its secrets.
public struct DeviceRegistration: Sendable, Equatable {
    public let device: String
    public let user: String
    public let server: String
    /// "" for the system's CA bundle.
    public let caFile: String
    public let publicKey: [UInt8]
    public let counter: UInt32
    public let pinPolicy: ActivatedPINPolicy
    public let pinFailures: Int
    public let blocked: Bool
    public let created: Int64
}

/// What the device sends with `decision: "approve"` (binary, the caller base64url-encodes).
public struct SignedApproval: Sendable, Equatable {
    public let authenticatorData: [UInt8]
    public let clientDataJSON: [UInt8]
    public let signature: [UInt8]
}

public enum PINCheck: Sendable, Equatable {
    case accepted
    /// Wrong; `remaining` tries before the device blocks.
    case wrong(remaining: Int)
    /// This was the last try (or the device was blocked already): the device is blocked now.
    case blocked
}

extension AuthenticatorStore {
    static let privateKeyLabel = "push-device:private-key"
    static let credentialLabel = "push-device:credential"
    static let offlineSecretLabel = "push-device:offline-secret"
    static let deviceColumns = "device, user, server, ca_file, public_key, counter, pin_required, pin_min_length, pin_max_length, pin_failures, blocked, created"

    static func notActivated() -> AuthenticatorError {
        AuthenticatorError(.missing, "this store has no push device yet; activate one with: securotp-authenticator activate CODE --server URL")
    }

    /// Records a new registration: the private key and credential sealed, the PIN as a slow
    /// hash (nil when the policy needs none). One device per store.
    public func registerDevice(device: String, user: String, server: String, caFile: String?, publicKey: [UInt8],
                               privateKey: SecretBytes, credential: SecretBytes, pinPolicy: ActivatedPINPolicy,
                               pin: SecretBytes?, now: Int64, offlineSecret: SecretBytes? = nil) throws(AuthenticatorError) {
        var pinHash = ""
        if let pin {
            guard let record = SlowHash.hash(pin) else { throw AuthenticatorError(.system, "no randomness available for the PIN's salt") }
            pinHash = String(decoding: record, as: UTF8.self)
        }
        try translating { () throws(StoreError) in
            let sealedKey = try SeedSealing.seal(privateKey, key: keys.dataKey, user: sealingOwner, serial: Self.privateKeyLabel)
            let sealedCredential = try SeedSealing.seal(credential, key: keys.dataKey, user: sealingOwner, serial: Self.credentialLabel)
            let sealedOffline = try offlineSecret.map { (secret) throws(StoreError) in
                try SeedSealing.seal(secret, key: keys.dataKey, user: sealingOwner, serial: Self.offlineSecretLabel)
            }
            try db.immediateTransaction { () throws(StoreError) in
                let existing = try db.prepare("SELECT device FROM device WHERE id = 1")
                defer { existing.reset() }
                if try existing.step() {
                    throw StoreError(.invalidInput, "this store already holds device \(existing.text(0)); remove it first with: securotp-authenticator remove")
                }
                try db.prepare("""
                    INSERT INTO device (id, device, user, server, ca_file, public_key, sealed_private_key, sealed_credential,
                        counter, pin_required, pin_min_length, pin_max_length, pin_hash, created)
                    VALUES (1, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)
                    """).bind(.text(device), .text(user), .text(server), .text(caFile ?? ""), .blob(publicKey), .blob(sealedKey),
                              .blob(sealedCredential), .integer(pinPolicy.required ? 1 : 0), .integer(Int64(pinPolicy.minLength)),
                              .integer(Int64(pinPolicy.maxLength)), .text(pinHash), .integer(now)).run()
                if let sealedOffline {
                    try db.prepare("UPDATE device SET sealed_offline_secret = ? WHERE id = 1").bind(.blob(sealedOffline)).run()
                }
            }
        }
    }

    /// Whether this store has a device that is not local-only: true when activated.
    public func hasDevice() throws(AuthenticatorError) -> Bool { try deviceRegistration() != nil }

    public func deviceRegistration() throws(AuthenticatorError) -> DeviceRegistration? {
        try translating { () throws(StoreError) -> DeviceRegistration? in
            let row = try db.prepare("SELECT \(Self.deviceColumns) FROM device WHERE id = 1")
            defer { row.reset() }
            guard try row.step() else { return nil }
            guard (0...Int64(UInt32.max)).contains(row.integer(5)), (1...64).contains(row.integer(7)),
                  (row.integer(7)...64).contains(row.integer(8)), row.integer(9) >= 0 else {
                throw StoreError(.corrupt, "the push device's row is damaged in \(paths.database); remove it (securotp-authenticator remove) and activate again")
            }
            return DeviceRegistration(device: row.text(0), user: row.text(1), server: row.text(2), caFile: row.text(3),
                                      publicKey: row.blob(4), counter: UInt32(row.integer(5)),
                                      pinPolicy: ActivatedPINPolicy(required: row.integer(6) != 0, minLength: Int(row.integer(7)),
                                                                 maxLength: Int(row.integer(8))),
                                      pinFailures: Int(row.integer(9)), blocked: row.integer(10) != 0, created: row.integer(11))
        }
    }

    func requireDevice() throws(AuthenticatorError) -> DeviceRegistration {
        guard let registration = try deviceRegistration() else { throw Self.notActivated() }
        return registration
    }

    private func sealedColumn(_ column: String, label: String) throws(AuthenticatorError) -> SecretBytes {
        try translating { () throws(StoreError) -> SecretBytes in
            let row = try db.prepare("SELECT \(column) FROM device WHERE id = 1")
            defer { row.reset() }
            guard try row.step() else { throw StoreError(.missing, Self.notActivated().message) }
            guard let opened = SeedSealing.open(row.blob(0), key: keys.dataKey, user: sealingOwner, serial: label) else {
                throw StoreError(.corrupt, "the push device's sealed \(label) does not open (altered, or copied from another store); remove the device and activate it again")
            }
            return opened
        }
    }

    /// The device credential (`sotp_d_…`) for the validator's Authorization header.
    public func deviceCredential() throws(AuthenticatorError) -> SecretBytes {
        try sealedColumn("sealed_credential", label: Self.credentialLabel)
    }

    /// Checks a PIN typed for an approval or an unlock. Three wrong PINs in a row block the
    /// device (the caller tells the validator); a right one clears the count. A blocked device
    /// checks nothing.
    public func checkPIN(_ pin: SecretBytes) throws(AuthenticatorError) -> PINCheck {
        try translating { () throws(StoreError) -> PINCheck in
            try db.immediateTransaction { () throws(StoreError) -> PINCheck in
                let row = try db.prepare("SELECT pin_hash, pin_failures, blocked FROM device WHERE id = 1")
                defer { row.reset() }
                guard try row.step() else { throw StoreError(.missing, Self.notActivated().message) }
                let record = Array(row.text(0).utf8)
                let failures = row.integer(1)
                guard row.integer(2) == 0 else { return .blocked }
                if SlowHash.verify(pin, against: record) {
                    try db.prepare("UPDATE device SET pin_failures = 0 WHERE id = 1").run()
                    return .accepted
                }
                let now = failures + 1
                let blocked = now >= Int64(ActivatedPINPolicy.maxFailures)
                try db.prepare("UPDATE device SET pin_failures = ?, blocked = ? WHERE id = 1")
                    .bind(.integer(now), .integer(blocked ? 1 : 0)).run()
                return blocked ? .blocked : .wrong(remaining: ActivatedPINPolicy.maxFailures - Int(now))
            }
        }
    }

    /// After an unlock code was accepted by the validator: a new PIN (nil when the policy needs
    /// none), the count cleared, the block lifted.
    public func unblockDevice(newPIN: SecretBytes?) throws(AuthenticatorError) {
        var pinHash = ""
        if let newPIN {
            guard let record = SlowHash.hash(newPIN) else { throw AuthenticatorError(.system, "no randomness available for the PIN's salt") }
            pinHash = String(decoding: record, as: UTF8.self)
        }
        try translating { () throws(StoreError) in
            try db.prepare("UPDATE device SET pin_hash = ?, pin_failures = 0, blocked = 0 WHERE id = 1").bind(.text(pinHash)).run()
            guard db.changes == 1 else { throw StoreError(.missing, Self.notActivated().message) }
        }
    }

    /// Deletes the registration, sealed key and credential included (secure_delete overwrites
    /// the rows in the file).
    public func forgetDevice() throws(AuthenticatorError) {
        try translating { () throws(StoreError) in
            try db.prepare("DELETE FROM device WHERE id = 1").run()
        }
    }

    /// Whether the validator gave this device an offline secret (activated with this version or later).
    public func hasOfflineSecret() throws(AuthenticatorError) -> Bool {
        try translating { () throws(StoreError) -> Bool in
            let row = try db.prepare("SELECT length(sealed_offline_secret) > 0 FROM device WHERE id = 1")
            defer { row.reset() }
            return try row.step() && row.integer(0) != 0
        }
    }

    /// The offline response to `challenge` (8 digits), made inside the store: the secret is
    /// opened, used and wiped here (docs/push.md, "Offline approval"). The caller checks the PIN.
    public func offlineResponse(challenge: String) throws(AuthenticatorError) -> String {
        guard try hasOfflineSecret() else {
            throw AuthenticatorError(.missing, "this device has no offline mode (activated before it existed); remove it and activate it again to get one")
        }
        let secret = try sealedColumn("sealed_offline_secret", label: Self.offlineSecretLabel)
        do throws(OCRAError) {
            return String(decoding: try OfflineApproval.response(secret: secret, challenge: challenge), as: UTF8.self)
        } catch {
            throw AuthenticatorError(.corrupt, "the offline secret cannot answer: \(error)")
        }
    }

    /// Signs an approval of `statement` inside the store: the counter moves on (on disk before
    /// the signature exists), the authenticator data says UP and, when the PIN was checked, UV.
    /// The private key is opened, used and wiped here; it never leaves.
    public func signApproval(_ statement: PushStatement, userVerified: Bool) throws(AuthenticatorError) -> SignedApproval {
        let counter = try translating { () throws(StoreError) -> UInt32 in
            try db.immediateTransaction { () throws(StoreError) -> UInt32 in
                let row = try db.prepare("SELECT counter FROM device WHERE id = 1")
                defer { row.reset() }
                guard try row.step() else { throw StoreError(.missing, Self.notActivated().message) }
                let next = row.integer(0) + 1
                guard next <= Int64(UInt32.max) else { throw StoreError(.limit, "the device's signature counter is exhausted; remove the device and activate it again") }
                try db.prepare("UPDATE device SET counter = ? WHERE id = 1").bind(.integer(next)).run()
                return UInt32(next)
            }
        }
        let privateKey = try sealedColumn("sealed_private_key", label: Self.privateKeyLabel)
        let authenticatorData = AuthenticatorData.head(rpID: ClientData.pushRPID, userVerified: userVerified, counter: counter)
        let clientData = ClientData.json(type: ClientData.pushType, challenge: statement.challenge, origin: ClientData.pushOrigin)
        let signature = try DeviceSigningKey.sign(ApprovalAssertion.signedBytes(authenticatorData: authenticatorData, clientDataJSON: clientData),
                                                  privateKey: privateKey)
        return SignedApproval(authenticatorData: authenticatorData, clientDataJSON: clientData, signature: signature)
    }
}
