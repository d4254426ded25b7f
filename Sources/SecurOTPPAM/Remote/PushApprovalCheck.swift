import CPosix
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
    /// `device_revoked=`: devices whose approvals this host refuses, certified or not.
    var revoked = DeviceRevocations()
    /// `device_cert_expiry=required`: a certificate without an expiry is refused.
    var requireCertificateExpiry = false
    /// Unix seconds: certificates expire on this host's clock, never the validator's.
    var now = Int64(time(nil))

    func check(_ approval: DeviceApproval, for request: Request) -> Result {
        // The kinds of device this host can check: DeviceType's table (docs/push.md).
        guard let deviceType = DeviceType(aaid: approval.aaid) else { return .refused(reason: "unsupported_authenticator") }
        if deviceType == .phonePasskey {
            guard acceptsWebApprovals else { return .refused(reason: "web_approval_not_allowed") }
            // The passkey signed at the validator's page; this host holds it to its own web_origin=.
            if let webOrigin, webOrigin != approval.origin { return .refused(reason: "wrong_origin") }
        }
        guard let expected = deviceType.expected(signedAt: approval.origin, requireUserVerification: requireUserVerification)
        else { return .refused(reason: "wrong_origin") }
        // The admin's revocations are this host's own data: the validator's word on a device
        // (still listed, still active) does not outweigh them.
        if revoked.contains(approval.device) { return .refused(reason: "device_revoked") }
        if let deviceCA {
            guard let certificate = approval.certificate else { return .refused(reason: "certificate_missing") }
            switch DeviceCertificate.check(certificate: certificate, user: request.user, device: approval.device,
                                           publicKey: approval.publicKey, caPublicKey: deviceCA, now: now) {
            case .invalid: return .refused(reason: "certificate_invalid")
            case .expired: return .refused(reason: "certificate_expired")
            case .valid(expires: nil) where requireCertificateExpiry: return .refused(reason: "certificate_no_expiry")
            case .valid: break
            }
        }
        let challenge = request.statement(device: approval.device).challenge
        let result = ApprovalAssertion.verify(authenticatorData: approval.authenticatorData, clientDataJSON: approval.clientDataJSON,
                                              signature: approval.signature, publicKey: approval.publicKey, expectedChallenge: challenge,
                                              expected: expected)
        switch result {
        case .accepted(_, let userVerified): return .accepted(userVerified: userVerified)
        case .refused(let refusal): return .refused(reason: refusal.code)
        }
    }

    /// Whether an approval this check accepted rests on a certificate without an expiry (made
    /// before certificates expired): taken, and logged as a warning naming the fix.
    func certificateWithoutExpiry(_ approval: DeviceApproval) -> Bool {
        guard deviceCA != nil, let certificate = approval.certificate, let parsed = DeviceCertificate.parse(certificate) else { return false }
        return parsed.expires == nil
    }

    /// `device_revoked=`'s list, checked like `device_ca=` (root-owned, not writable by others).
    /// The error names the file, the line and what to do.
    static func loadRevocations(_ path: String) throws(StoreError) -> DeviceRevocations {
        let bytes = try FileSecurity.contents(of: path, .policy, maxSize: DeviceRevocations.maxSize)
        do throws(DeviceRevocations.BadLine) {
            return try DeviceRevocations(parsing: bytes)
        } catch {
            throw StoreError(.config, "device_revoked=\(path) line \(error.line) is not a device id (dv and 16 hex digits), a comment (#) or blank")
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
