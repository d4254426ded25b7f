import SecurOTPCore

/// Offline approval on the validator (docs/push.md, "Offline approval"): what both stores
/// share, so that each store only reads, seals and moves rows.
extension PushRules {
    /// 32 random bytes for a device of the authenticator's kind, nil for any other.
    public static func newOfflineSecret(aaid: String) throws(ServiceError) -> SecretBytes? {
        guard DeviceType(aaid: aaid)?.hasOfflineSecret == true else { return nil }
        return try random(OfflineApproval.secretLength)
    }

    /// The activation answer, with the offline secret (returned this once) when there is one.
    public static func activated(device: String, user: String, credential: String, pinPolicy: DevicePINPolicy,
                                 offlineSecret: SecretBytes?) -> DeviceActivated {
        var answer = DeviceActivated(device: device, user: user, credential: credential, pinPolicy: pinPolicy)
        if let offlineSecret {
            answer.offlineSecret = offlineSecret.withUnsafeBytes { base64URLEncode(Array($0)) }
            answer.offlineSuite = OfflineApproval.suiteText
        }
        return answer
    }

    /// Only an answer of exactly 8 digits, not a code-at-end answer (`forward_pass` never
    /// shows a push prompt), can be an offline response.
    public static func mayBeOfflineResponse(_ request: VerifyRequest) -> Bool {
        request.codeAtEnd != true && request.passcode.utf8.count == OfflineApproval.digits
            && request.passcode.utf8.allSatisfy { (48...57).contains($0) }
    }

    /// The id of the active device whose offline response `answer` is, or nil. Every device
    /// with a secret is compared (constant time each), whatever matched before it.
    public static func offlineMatch(_ answer: String, challenge: String, devices: [PushDeviceRow],
                                    open: (PushDeviceRow) -> SecretBytes?) -> String? {
        var match: String?
        for device in devices where device.state == "active" && !device.offlineSecret.isEmpty {
            guard let secret = open(device) else { continue }
            if OfflineApproval.matches(answer, secret: secret, challenge: challenge), match == nil { match = device.id }
        }
        return match
    }

    /// What `/v1/verify` answers for a taken offline response.
    public static func offlineAccepted(device: String) -> VerifyResponse {
        VerifyResponse(result: .accept, outcome: .pushOffline, serial: device, reason: "offline push approval")
    }
}
