import SecurOTPCore
import SecurOTPEngine

/// A device and a push request as stored (SQLite PushTables, PostgreSQL alike), with what both
/// stores derive from them: the device list item, the request a device is shown, the statement.
public struct PushDeviceRow: Sendable {
    public var id: String
    public var user: String
    public var name: String
    public var aaid: String
    public var state: String
    public var activationExpires: Int64
    public var publicKey: [UInt8]
    public var certificate: String
    public var credentialHash: [UInt8]
    public var signCounter: Int64
    public var userVerification: Bool
    public var unlockHash: [UInt8]
    public var unlockExpires: Int64
    public var created: Int64
    public var lastUsed: Int64
    /// The offline secret sealed under the store's data key (`Store.sealDeviceSecret`), or
    /// empty: a device without offline mode (docs/push.md, "Offline approval").
    public var offlineSecret: [UInt8]

    public init(id: String, user: String, name: String, aaid: String, state: String, activationExpires: Int64, publicKey: [UInt8],
                certificate: String, credentialHash: [UInt8], signCounter: Int64, userVerification: Bool, unlockHash: [UInt8],
                unlockExpires: Int64, created: Int64, lastUsed: Int64, offlineSecret: [UInt8] = []) {
        self.offlineSecret = offlineSecret
        self.id = id; self.user = user; self.name = name; self.aaid = aaid; self.state = state; self.activationExpires = activationExpires
        self.publicKey = publicKey; self.certificate = certificate; self.credentialHash = credentialHash; self.signCounter = signCounter
        self.userVerification = userVerification; self.unlockHash = unlockHash; self.unlockExpires = unlockExpires; self.created = created
        self.lastUsed = lastUsed
    }

    public var info: DeviceInfo {
        DeviceInfo(device: id, user: user, name: name, aaid: aaid, state: state,
                   publicKey: publicKey.isEmpty ? nil : PushRules.base64URLEncode(publicKey), certified: !certificate.isEmpty,
                   userVerification: userVerification, created: created, lastUsed: lastUsed)
    }
}

public struct PushRequestRow: Sendable {
    public var id: String
    public var user: String
    public var host: String
    public var service: String
    public var remoteAddress: String
    public var tty: String
    public var command: String
    public var nonce: String
    public var number: String
    public var created: Int64
    public var expires: Int64
    public var state: String
    public var wrongNumbers: Int
    public var device: String
    public var authenticatorData: [UInt8]
    public var clientDataJSON: [UInt8]
    public var signature: [UInt8]
    public var result: String

    public init(id: String, user: String, host: String, service: String, remoteAddress: String, tty: String, command: String, nonce: String,
                number: String, created: Int64, expires: Int64, state: String, wrongNumbers: Int, device: String, authenticatorData: [UInt8],
                clientDataJSON: [UInt8], signature: [UInt8], result: String) {
        self.id = id; self.user = user; self.host = host; self.service = service; self.remoteAddress = remoteAddress; self.tty = tty
        self.command = command; self.nonce = nonce; self.number = number; self.created = created; self.expires = expires; self.state = state
        self.wrongNumbers = wrongNumbers; self.device = device; self.authenticatorData = authenticatorData; self.clientDataJSON = clientDataJSON
        self.signature = signature; self.result = result
    }

    /// What a host's wait hands out (once) for an approved request.
    /// `origin`: where a web device's passkey signed (`FFFF#0002`), for the host's check.
    public func approval(by device: PushDeviceRow, origin: String? = nil) -> PushApproval {
        var approval = PushApproval(device: device.id, aaid: device.aaid, publicKey: PushRules.base64URLEncode(device.publicKey),
                                    certificate: device.certificate.isEmpty ? nil : device.certificate,
                                    authenticatorData: PushRules.base64URLEncode(authenticatorData),
                                    clientDataJson: PushRules.base64URLEncode(clientDataJSON), signature: PushRules.base64URLEncode(signature))
        approval.origin = origin
        return approval
    }

    public var forDevice: DevicePushRequest {
        DevicePushRequest(id: id, user: user, host: host, service: service, remoteAddress: remoteAddress, tty: tty, command: command,
                          nonce: nonce, expires: expires)
    }

    /// The offline challenge both the host and the validator derive from this request
    /// (docs/push.md, "Offline approval").
    public var offlineChallenge: String {
        OfflineApproval.challenge(PushStatement(id: id, user: user, host: host, service: service, remoteAddress: remoteAddress, tty: tty,
                                                command: command, nonce: nonce, number: number, expires: String(expires), device: ""))
    }

    public func statement(device: String) -> [UInt8] {
        PushRules.statement(id: id, user: user, host: host, service: service, remoteAddress: remoteAddress, tty: tty, command: command,
                            nonce: nonce, number: number, expires: expires, device: device)
    }
}
