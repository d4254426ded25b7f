import SecurOTPCore

/// `securotp --server URL device …`: the admin's device calls through the /v1 API. The calls
/// of devices and hosts are theirs to make with their own credentials, never an admin's.
extension RemoteTokenService: DeviceService {
    public var pushPolicy: PushPolicy { PushPolicy() }

    private static let notAdmin = ServiceError(.notSupported, "devices and hosts make this call with their own credential, not through securotp --server")

    private static func device(_ path: APIPath, _ user: String, _ device: String) -> String { Self.path(path, ["user": user, "device": device]) }

    public func addDevice(user: String, _ request: DeviceAddRequest, caller: Caller) async throws(ServiceError) -> DeviceAdded {
        try await call("POST", Self.path(.userDevices, ["user": user]), request)
    }

    public func devices(user: String?, caller: Caller) async throws(ServiceError) -> DeviceList {
        try await call("GET", Self.path(.devices, query: user.map { [("user", $0)] } ?? []))
    }

    public func removeDevice(user: String, device: String, caller: Caller) async throws(ServiceError) {
        try await send("DELETE", Self.device(.userDevice, user, device))
    }

    public func unlockCode(user: String, device: String, caller: Caller) async throws(ServiceError) -> DeviceUnlockCode {
        try await call("POST", Self.device(.userDeviceUnlockCode, user, device), Empty())
    }

    public func setCertificate(user: String, device: String, _ request: DeviceCertificateRequest, caller: Caller) async throws(ServiceError) {
        try await send("POST", Self.device(.userDeviceCertificate, user, device), request)
    }

    public func unblockPush(user: String, caller: Caller) async throws(ServiceError) -> PushUnblocked {
        try await call("POST", Self.path(.userPushUnblock, ["user": user]), Empty())
    }

    public func activateDevice(_ request: DeviceActivationRequest, address: String) async throws(ServiceError) -> DeviceActivated { throw Self.notAdmin }
    public func authenticateDevice(credential: String, address: String) async throws(ServiceError) -> Caller { throw Self.notAdmin }
    public func pendingPushes(caller: Caller) async throws(ServiceError) -> DevicePushList { throw Self.notAdmin }
    public func answerPush(_ request: DeviceAnswerRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse { throw Self.notAdmin }
    public func blockDevice(caller: Caller) async throws(ServiceError) { throw Self.notAdmin }
    public func unlockDevice(_ request: DeviceUnlockRequest, caller: Caller) async throws(ServiceError) -> DeviceStateResponse { throw Self.notAdmin }
    public func deregisterDevice(caller: Caller) async throws(ServiceError) { throw Self.notAdmin }
    public func pushAvailable(user: String) async throws(ServiceError) -> Bool { throw Self.notAdmin }
    public func openPush(_ request: PushOpenRequest, caller: Caller) async throws(ServiceError) -> PushOpened { throw Self.notAdmin }
    public func pushStatus(id: String, caller: Caller) async throws(ServiceError) -> PushStatus { throw Self.notAdmin }
    public func pushResult(_ request: PushResultRequest, caller: Caller) async throws(ServiceError) { throw Self.notAdmin }
    public func cancelPush(_ request: PushCancelRequest, caller: Caller) async throws(ServiceError) -> PushStatus { throw Self.notAdmin }
    /// `verify` forwards `push_id` as it is: the validator behind this client decides.
    public func verifyOffline(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse? { nil }
}
