import SecurOTPCore
/// Push approval (docs/push.md): devices, and logins that ask them. A protocol of its own beside
/// TokenService, so that a backend without it is told apart by a cast and the server answers
/// `not_supported` (SQLite, PostgreSQL and the remote client all implement it). Authorisation
/// is the server's, as for TokenService; every implementation audits what it does.
public protocol DeviceService: Sendable {
    var pushPolicy: PushPolicy { get }

    // MARK: admins

    func addDevice(user: String, _ request: DeviceAddRequest, caller: Caller) async throws(ServiceError) -> DeviceAdded
    /// One user's devices, or everyone's when `user` is nil.
    func devices(user: String?, caller: Caller) async throws(ServiceError) -> DeviceList
    func removeDevice(user: String, device: String, caller: Caller) async throws(ServiceError)
    func unlockCode(user: String, device: String, caller: Caller) async throws(ServiceError) -> DeviceUnlockCode
    func setCertificate(user: String, device: String, _ request: DeviceCertificateRequest, caller: Caller) async throws(ServiceError)
    /// Clears `deny --fraud` (and the requests counted against `push_limit`).
    func unblockPush(user: String, caller: Caller) async throws(ServiceError) -> PushUnblocked

    // MARK: devices

    /// No credential: the single-use activation code is one.
    func activateDevice(_ request: DeviceActivationRequest, address: String) async throws(ServiceError) -> DeviceActivated
    /// The caller a device credential (`sotp_d_…`) belongs to: kind `.device`, name the device
    /// id, `users` its one user. `unauthorized` for anything else, one message for all.
    func authenticateDevice(credential: String, address: String) async throws(ServiceError) -> Caller
    func pendingPushes(caller: Caller) async throws(ServiceError) -> DevicePushList
    func answerPush(_ request: DeviceAnswerRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse
    /// The device blocked itself (three wrong PINs).
    func blockDevice(caller: Caller) async throws(ServiceError)
    func unlockDevice(_ request: DeviceUnlockRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse
    /// Deregistration from the device's side.
    func deregisterDevice(caller: Caller) async throws(ServiceError)

    // MARK: hosts

    /// Whether preflight offers push: an active device and pushes not blocked.
    func pushAvailable(user: String) async throws(ServiceError) -> Bool
    func openPush(_ request: PushOpenRequest, caller: Caller) async throws(ServiceError) -> PushOpened
    /// The request's state; an approval is handed out once (the request becomes `consumed`).
    func pushStatus(id: String, caller: Caller) async throws(ServiceError) -> PushStatus
    func pushResult(_ request: PushResultRequest, caller: Caller) async throws(ServiceError)
    func cancelPush(_ request: PushCancelRequest, caller: Caller) async throws(ServiceError) -> PushStatus
    /// `/v1/verify` with `push_id` (docs/push.md, "Offline approval"): the accept when the
    /// answer is the request's offline response (taken once); otherwise nil, after cancelling
    /// the request, and the answer is verified as a passcode.
    func verifyOffline(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse?
}

/// The validator's push settings (securotpd.conf, docs/validator.md).
public struct PushPolicy: Sendable, Equatable {
    /// `push_limit`: requests a user may have counted at once (0: no limit); each counts for
    /// `limitInterval` seconds after the one before it, and any successful login clears them
    /// (PushRate, docs/push.md "Limits are rates").
    public var limit = 5
    /// `push_limit_interval`: seconds one counted request takes to decay (30–3600).
    public var limitInterval: Int64 = 60
    /// `push_lifetime`: seconds a push request waits for an answer.
    public var requestLifetime: Int64 = 60
    /// `activation_lifetime`: seconds activation and unlock codes stay valid.
    public var activationLifetime: Int64 = 600
    /// `device_pin`, `device_pin_min`, `device_pin_max`: what devices are told at activation;
    /// with a PIN required, approvals must say the user was verified (UV).
    public var pinRequired = true
    public var pinMinLength = 4
    public var pinMaxLength = 8
    /// `public_url`: where phones' browsers reach the validator (web devices, `FFFF#0002`);
    /// nil refuses them.
    public var publicURL: PublicURL?
    /// Wrong numbers that fail a request.
    public static let wrongNumbersToFail = 3

    public init() {}

    /// The origin a web device's (`FFFF#0002`) passkey signs at: public_url's (the page is served
    /// only there); nil for other devices. A web device while public_url is unset gets "", which
    /// no client data matches.
    public func webOrigin(aaid: String) -> String? {
        DeviceType(aaid: aaid) == .phonePasskey ? (publicURL?.origin ?? "") : nil
    }

    /// The activation URL a `web: true` device add answers with; 409 while `public_url` is unset.
    public func activationURL(_ request: DeviceAddRequest, code: String) throws(ServiceError) -> String? {
        guard request.web == true else { return nil }
        guard let publicURL else { throw PublicURL.unset }
        return publicURL.activationURL(code: code)
    }
}
