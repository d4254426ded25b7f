/// The push-approval part of the /v1 API (docs/push.md, "HTTP API"): what hosts, devices and
/// admins send and get back. Binary fields are base64url without padding; keys snake_case.

// MARK: hosts

/// `POST /v1/push`: a login asks the user's devices. The host chose `nonce` and `number`.
public struct PushOpenRequest: Codable, Sendable, Equatable {
    public var user: String
    public var nonce: String
    public var number: String
    public var service: String?
    public var remoteAddress: String?
    public var tty: String?
    public var command: String?

    public init(user: String, nonce: String, number: String, service: String? = nil, remoteAddress: String? = nil, tty: String? = nil,
                command: String? = nil) {
        self.user = user
        self.nonce = nonce
        self.number = number
        self.service = service
        self.remoteAddress = remoteAddress
        self.tty = tty
        self.command = command
    }
}

/// `201` to `POST /v1/push`.
public struct PushOpened: Codable, Sendable, Equatable {
    public var id: String
    /// Unix seconds.
    public var expires: Int64
    /// The host credential's name, as the device is told it and signs it (field(host)).
    public var host: String
    /// True when one of the user's active devices has an offline secret: the host may show the
    /// offline challenge (docs/push.md, "Offline approval"). Absent otherwise.
    public var offline: Bool?

    public init(id: String, expires: Int64, host: String, offline: Bool? = nil) {
        self.id = id
        self.expires = expires
        self.host = host
        self.offline = offline
    }
}

/// `POST /v1/push/wait`.
public struct PushWaitRequest: Codable, Sendable, Equatable {
    public var id: String
    /// Seconds to wait at most, 1–30 (default 25).
    public var wait: Int?
    /// The wrong numbers the host has already told its user of: the wait also ends when the
    /// request's count differs (a wrong number typed on the device is told at once). Absent:
    /// the wait ends only when the request leaves pending (hosts before this field).
    public var wrongNumbers: Int?

    public init(id: String, wait: Int? = nil, wrongNumbers: Int? = nil) {
        self.id = id
        self.wait = wait
        self.wrongNumbers = wrongNumbers
    }
}

/// A push request's state as its host sees it; `approval` only in the one answer that hands it out.
public struct PushStatus: Codable, Sendable, Equatable {
    public var id: String
    /// pending, approved (never seen by a host: handing it out makes it consumed), consumed,
    /// denied, expired, failed, cancelled.
    public var state: String
    public var expires: Int64
    public var approval: PushApproval?
    /// `pending`: the wrong numbers typed on the device so far, when there are any.
    public var wrongNumbers: Int?
    /// `failed`: why — `wrong_number` (the device typed a wrong number too often) or
    /// `approval_refused` (the validator refused the device's signed answer, or the approving
    /// device is gone), so the host tells its user the truth.
    public var reason: String?

    public init(id: String, state: String, expires: Int64, approval: PushApproval? = nil, wrongNumbers: Int? = nil, reason: String? = nil) {
        self.id = id
        self.state = state
        self.expires = expires
        self.approval = approval
        self.wrongNumbers = wrongNumbers
        self.reason = reason
    }
}

/// What the host verifies itself (docs/push.md, "The signed statement").
public struct PushApproval: Codable, Sendable, Equatable {
    public var device: String
    public var aaid: String
    /// SPKI DER, base64url.
    public var publicKey: String
    /// `securotp device certify`'s signature (base64), when the device has one.
    public var certificate: String?
    public var authenticatorData: String
    public var clientDataJson: String
    public var signature: String
    /// `FFFF#0002` (a phone's passkey): the origin it signed at; the host's check uses it.
    public var origin: String?

    public init(device: String, aaid: String, publicKey: String, certificate: String?, authenticatorData: String, clientDataJson: String,
                signature: String) {
        self.device = device
        self.aaid = aaid
        self.publicKey = publicKey
        self.certificate = certificate
        self.authenticatorData = authenticatorData
        self.clientDataJson = clientDataJson
        self.signature = signature
    }
}

/// `POST /v1/push/result`: the host's own check of the approval it was handed.
public struct PushResultRequest: Codable, Sendable, Equatable {
    public var id: String
    public var accepted: Bool
    public var reason: String?

    public init(id: String, accepted: Bool, reason: String? = nil) {
        self.id = id
        self.accepted = accepted
        self.reason = reason
    }
}

/// `POST /v1/push/cancel`.
public struct PushCancelRequest: Codable, Sendable, Equatable {
    public var id: String

    public init(id: String) { self.id = id }
}

// MARK: devices

/// `POST /v1/devices/activate`: the single-use activation code is the credential.
public struct DeviceActivationRequest: Codable, Sendable, Equatable {
    public var activationCode: String
    /// SPKI DER of the device's P-256 key, base64url.
    public var publicKey: String
    public var name: String?
    /// FIDO UAF authenticator id `VVVV#MMMM` (default FFFF#0001, securotp-authenticator).
    public var aaid: String?
    public var userVerification: Bool?

    public init(activationCode: String, publicKey: String, name: String? = nil, aaid: String? = nil, userVerification: Bool? = nil) {
        self.activationCode = activationCode
        self.publicKey = publicKey
        self.name = name
        self.aaid = aaid
        self.userVerification = userVerification
    }
}

public struct DevicePINPolicy: Codable, Sendable, Equatable {
    public var required: Bool
    public var minLength: Int
    public var maxLength: Int

    public init(required: Bool, minLength: Int, maxLength: Int) {
        self.required = required
        self.minLength = minLength
        self.maxLength = maxLength
    }
}

/// The device credential is returned once; only its hash is kept.
public struct DeviceActivated: Codable, Sendable, Equatable {
    public var device: String
    public var user: String
    public var credential: String
    public var pinPolicy: DevicePINPolicy
    /// The offline secret (32 bytes, base64url), returned once, for `FFFF#0001` devices
    /// (docs/push.md, "Offline approval"); with `offlineSuite`, `OfflineApproval.suiteText`.
    public var offlineSecret: String?
    public var offlineSuite: String?

    public init(device: String, user: String, credential: String, pinPolicy: DevicePINPolicy, offlineSecret: String? = nil,
                offlineSuite: String? = nil) {
        self.device = device
        self.user = user
        self.credential = credential
        self.pinPolicy = pinPolicy
        self.offlineSecret = offlineSecret
        self.offlineSuite = offlineSuite
    }
}

/// `POST /v1/device/requests`.
public struct DeviceWaitRequest: Codable, Sendable, Equatable {
    public var wait: Int?
    /// The ids of the pending requests the device shows already: the wait holds while the
    /// pending set is exactly these, so a request that arrives, is answered, cancelled,
    /// superseded or expires ends it (docs/push.md). Absent: holds while none is pending.
    public var known: [String]?

    public init(wait: Int? = nil, known: [String]? = nil) {
        self.wait = wait
        self.known = known
    }
}

/// A pending request as a device sees it: never the number.
public struct DevicePushRequest: Codable, Sendable, Equatable {
    public var id: String
    public var user: String
    public var host: String
    public var service: String
    public var remoteAddress: String
    public var tty: String
    public var command: String
    public var nonce: String
    public var expires: Int64

    public init(id: String, user: String, host: String, service: String, remoteAddress: String, tty: String, command: String, nonce: String,
                expires: Int64) {
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
}

public struct DevicePushList: Codable, Sendable, Equatable {
    public var requests: [DevicePushRequest]

    public init(requests: [DevicePushRequest]) { self.requests = requests }
}

/// `POST /v1/device/answer`.
public struct DeviceAnswerRequest: Codable, Sendable, Equatable {
    public var id: String
    /// approve, deny or fraud.
    public var decision: String
    public var authenticatorData: String?
    public var clientDataJson: String?
    public var signature: String?
    public var number: String?

    public init(id: String, decision: String, authenticatorData: String? = nil, clientDataJson: String? = nil, signature: String? = nil,
                number: String? = nil) {
        self.id = id
        self.decision = decision
        self.authenticatorData = authenticatorData
        self.clientDataJson = clientDataJson
        self.signature = signature
        self.number = number
    }
}

/// The request's state after a device's answer, or a device's own state. `reason` says why an
/// approval was not taken ("wrong number", "signature does not verify").
public struct DeviceStateResponse: Codable, Sendable, Equatable {
    public var state: String
    public var reason: String?

    public init(state: String, reason: String? = nil) {
        self.state = state
        self.reason = reason
    }
}

/// `POST /v1/device/unlock`.
public struct DeviceUnlockRequest: Codable, Sendable, Equatable {
    public var unlockCode: String

    public init(unlockCode: String) { self.unlockCode = unlockCode }
}

// MARK: admins

/// `POST /v1/users/{user}/devices`.
public struct DeviceAddRequest: Codable, Sendable, Equatable {
    public var name: String?
    /// A passkey in a browser (issue 16): the answer also carries an activation URL.
    public var web: Bool?

    public init(name: String? = nil, web: Bool? = nil) {
        self.name = name
        self.web = web
    }
}

public struct DeviceAdded: Codable, Sendable, Equatable {
    public var device: String
    public var user: String
    /// `ABCD-EFGH-JKMN-PQRS`, single-use, shown once.
    public var activationCode: String
    public var expires: Int64
    public var activationUrl: String?

    public init(device: String, user: String, activationCode: String, expires: Int64, activationUrl: String? = nil) {
        self.device = device
        self.user = user
        self.activationCode = activationCode
        self.expires = expires
        self.activationUrl = activationUrl
    }
}

public struct DeviceInfo: Codable, Sendable, Equatable {
    public var device: String
    public var user: String
    public var name: String
    public var aaid: String
    /// pending, active or blocked.
    public var state: String
    /// SPKI DER, base64url; absent while pending.
    public var publicKey: String?
    public var certified: Bool
    public var userVerification: Bool
    public var created: Int64
    public var lastUsed: Int64

    public init(device: String, user: String, name: String, aaid: String, state: String, publicKey: String?, certified: Bool,
                userVerification: Bool, created: Int64, lastUsed: Int64) {
        self.device = device
        self.user = user
        self.name = name
        self.aaid = aaid
        self.state = state
        self.publicKey = publicKey
        self.certified = certified
        self.userVerification = userVerification
        self.created = created
        self.lastUsed = lastUsed
    }
}

public struct DeviceList: Codable, Sendable, Equatable {
    public var devices: [DeviceInfo]

    public init(devices: [DeviceInfo]) { self.devices = devices }
}

public struct DeviceUnlockCode: Codable, Sendable, Equatable {
    public var unlockCode: String
    public var expires: Int64

    public init(unlockCode: String, expires: Int64) {
        self.unlockCode = unlockCode
        self.expires = expires
    }
}

/// `POST /v1/users/{user}/devices/{device}/certificate`.
public struct DeviceCertificateRequest: Codable, Sendable, Equatable {
    public var certificate: String

    public init(certificate: String) { self.certificate = certificate }
}

/// `POST /v1/users/{user}/push/unblock`.
public struct PushUnblocked: Codable, Sendable, Equatable {
    public var wasBlocked: Bool

    public init(wasBlocked: Bool) { self.wasBlocked = wasBlocked }
}
