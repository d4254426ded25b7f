import SecurOTPCore
import SecurOTPStore

/// The host's own check of a device's approval (docs/push.md, "The signed statement"): it
/// rebuilds the statement from what it sent — its nonce and number, the login's context, the
/// request id and expiry the validator gave, this host's name — and verifies the device's
/// signature over it, never taking the validator's word. With `device_ca=` the device's key
/// must also carry the admin's certificate for this user and device.
struct PushApprovalCheck {
    /// The request as this host made it.
    struct Request {
        let id: String
        let user: String
        let host: String
        let context: PushContext
        let challenge: PushChallenge
        let expires: Int64

        /// The statement the device must have signed, for `device`.
        func statement(device: String) -> PushStatement {
            PushStatement(id: id, user: user, host: host, service: context.service, remoteAddress: context.remoteAddress,
                          tty: context.tty, command: context.command, nonce: challenge.nonce, number: challenge.number,
                          expires: String(expires), device: device)
        }
    }

    enum Result: Equatable {
        case accepted(userVerified: Bool)
        /// `reason`: snake_case, for the log and `POST /v1/push/result`.
        case refused(reason: String)
    }

    /// The SPKI DER of `device_ca=`, when set.
    let deviceCA: [UInt8]?
    let requireUserVerification: Bool
    /// `web_origin=`: the one origin phones' passkeys may sign at.
    var webOrigin: String? = nil
    /// `push_web=` (deny by default with `device_ca=`): whether passkey approvals are taken.
    var acceptsWebApprovals = true

    /// The kinds of device this host can check: securotp-authenticator, and a passkey in a
    /// phone's browser (docs/push.md "Phones without an app").
    static let authenticatorAAID = "FFFF#0001"
    static let webAAID = "FFFF#0002"

    func check(_ approval: DeviceApproval, for request: Request) -> Result {
        let type: String, origin: String, rpID: String, requireUV: Bool
        switch approval.aaid {
        case Self.authenticatorAAID:
            type = ClientData.pushType
            origin = ClientData.pushOrigin
            rpID = ClientData.pushRPID
            requireUV = requireUserVerification
        case Self.webAAID:
            guard acceptsWebApprovals else { return .refused(reason: "web_approval_not_allowed") }
            // The passkey signed at the validator's page: its origin, its host name as RP id, and
            // always with the user verified (the browser asked for it).
            guard let signedAt = approval.origin, let host = ClientData.webRPID(origin: signedAt) else { return .refused(reason: "wrong_origin") }
            if let webOrigin, webOrigin != signedAt { return .refused(reason: "wrong_origin") }
            type = ClientData.webAuthnGetType
            origin = signedAt
            rpID = host
            requireUV = true
        default:
            return .refused(reason: "unsupported_authenticator")
        }
        if let deviceCA {
            guard let certificate = approval.certificate else { return .refused(reason: "certificate_missing") }
            guard DeviceCertificate.verify(certificate: certificate, user: request.user, device: approval.device,
                                           publicKey: approval.publicKey, caPublicKey: deviceCA)
            else { return .refused(reason: "certificate_invalid") }
        }
        let challenge = request.statement(device: approval.device).challenge
        let result = ApprovalAssertion.verify(authenticatorData: approval.authenticatorData, clientDataJSON: approval.clientDataJSON,
                                              signature: approval.signature, publicKey: approval.publicKey, expectedChallenge: challenge,
                                              expectedType: type, expectedOrigin: origin, expectedRPID: rpID,
                                              requireUserVerification: requireUV)
        switch result {
        case .accepted(_, let userVerified): return .accepted(userVerified: userVerified)
        case .refused(let refusal): return .refused(reason: refusal.code)
        }
    }

    /// `device_ca=`'s key, checked like `ca_file` (root-owned, not writable by others) and
    /// required to be a P-256 public key. The error names the file and what to do.
    static func loadDeviceCA(_ path: String) throws(StoreError) -> [UInt8] {
        let bytes = try FileSecurity.contents(of: path, .policy, maxSize: DeviceCertificate.maxPEMLength)
        guard let key = DeviceCertificate.publicKey(pem: bytes), P256PublicKey.isSPKI(key) else {
            throw StoreError(.config, "device_ca=\(path) holds no P-256 public key (expected a PEM \"PUBLIC KEY\" block: openssl pkey -in CA-KEY -pubout)")
        }
        return key
    }
}
