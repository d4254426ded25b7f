import Foundation
import Hummingbird
import SecurOTPCore
import Logging
import SecurOTPService

/// Push approval's routes (docs/push.md, "HTTP API"): hosts open and wait on requests, devices
/// wait for requests and answer them, admins enroll and manage devices. Waits are long-polls
/// on PushWaiters: a state change answers them at once, with no polling interval anywhere.
struct PushRoutes {
    let devices: (any DeviceService)?
    let waiters: PushWaiters
    /// Where a waiting long-poll parks instead of holding its task.
    var polls = LongPolls()
    /// Wake-up hooks, when configured: started after the request is stored, never awaited.
    var hooks: PushWakeHooks? = nil

    static let defaultWait = 25
    static let waitRange = 1...30

    private func service() throws(ServiceError) -> any DeviceService {
        guard let devices else { throw ServiceError(.notSupported, "push approval is not available with this store (docs/push.md)") }
        return devices
    }

    private static func waitSeconds(_ wait: Int?) throws(ServiceError) -> Double {
        let wait = wait ?? defaultWait
        guard waitRange.contains(wait) else { throw ServiceError(.invalidInput, "wait must be \(waitRange.lowerBound)–\(waitRange.upperBound) seconds") }
        return Double(wait)
    }

    private static var now: Double { Date().timeIntervalSince1970 }

    private func ticket(_ key: String, owner: WaitOwner = .host) async throws(ServiceError) -> Int {
        switch await waiters.register(key, owner: owner) {
        case .success(let ticket):
            return ticket
        case .failure(.full):
            throw ServiceError(.unavailable, "too many waiting requests on this validator (\(waiters.capacity)); try again")
        case .failure(.ownerFull(let why)):
            throw ServiceError(.rateLimited, "\(why); wait for one to end")
        }
    }

    // MARK: hosts (behind the host credential; HostRoutes checks the user's scope first)

    func open(_ body: PushOpenRequest, caller: Caller) async throws -> PushOpened {
        let opened = try await service().openPush(body, caller: caller)
        await waiters.notify(PushWaiters.user(body.user))
        hooks?.fire(PushWake(id: opened.id, user: body.user, host: opened.host, service: body.service ?? "", remoteAddress: body.remoteAddress ?? "",
                             expires: opened.expires))
        return opened
    }

    /// Answers as soon as the request leaves `pending`, or after `wait` seconds, or at its expiry.
    func wait(_ body: PushWaitRequest, caller: Caller, context: ValidatorRequestContext) async throws -> Response {
        let deadline = Self.now + (try Self.waitSeconds(body.wait))
        return try await polls.answer(context: context, waiters: waiters) { try await waitStep(body, caller: caller, deadline: deadline) }
    }

    /// One look at the request: its status once it is no longer pending or the wait is over,
    /// else the ticket to wait on (taken before the read) and for how long.
    func waitStep(_ body: PushWaitRequest, caller: Caller, deadline: Double) async throws -> PollStep<PushStatus> {
        let devices = try service()
        let ticket = try await ticket(PushWaiters.request(body.id))
        let status: PushStatus
        do { status = try await devices.pushStatus(id: body.id, caller: caller) } catch {
            await waiters.finish(ticket)
            throw error
        }
        // Past its expiry the next read marks the request expired. A host that says how many
        // wrong numbers it has told its user of is answered as soon as another one is typed.
        let remaining = min(deadline, Double(status.expires) + 0.01) - Self.now
        let newWrongNumber = body.wrongNumbers.map { $0 != (status.wrongNumbers ?? 0) } ?? false
        guard status.state == "pending", !newWrongNumber, remaining > 0, deadline > Self.now else {
            await waiters.finish(ticket)
            return .done(status)
        }
        return .wait(ticket: ticket, seconds: remaining)
    }

    func result(_ body: PushResultRequest, caller: Caller) async throws {
        try await service().pushResult(body, caller: caller)
        await waiters.notify(PushWaiters.request(body.id))
    }

    func cancel(_ body: PushCancelRequest, caller: Caller) async throws -> PushStatus {
        let status = try await service().cancelPush(body, caller: caller)
        await waiters.notify(PushWaiters.request(body.id))
        return status
    }

    /// `/v1/verify` with `push_id`: the accept of an offline response, or nil (the request was
    /// cancelled; the answer is verified as a passcode). Either way the request's and the
    /// user's waits see the change at once.
    func verifyOffline(_ body: VerifyRequest, caller: Caller) async throws -> VerifyResponse? {
        guard let devices, let pushID = body.pushId else { return nil }
        let accepted = try await devices.verifyOffline(body, caller: caller)
        await waiters.notify(PushWaiters.request(pushID))
        await waiters.notify(PushWaiters.user(body.user))
        return accepted
    }

    /// Any accepted host verification (a passcode, a security key, an offline response) clears
    /// the user's requests counted against `push_limit` (PushUpkeep; a push's own success
    /// clears them in its transaction). Best effort: the login is accepted either way.
    func loginSucceeded(user: String, logger: Logger) async {
        guard let upkeep = devices as? any PushUpkeep else { return }
        do throws(ServiceError) {
            try await upkeep.loginSucceeded(user: user)
        } catch {
            logger.warning("clearing the push limit after a login failed", metadata: ["error": "\(error.message)"])
        }
    }

    // MARK: devices

    /// `POST /v1/devices/activate`: no credential (the activation code is one), so behind
    /// AddressRateLimit. A refused code is counted in `misses`, which audits them per address
    /// in aggregate (the store audits only a code that names a device, as an expired one).
    func addActivation(to group: RouterGroup<ValidatorRequestContext>, misses: AnonymousMisses) {
        group.post(APIPath.devicesActivate.route()) { request, context in
            let body = try await request.decode(as: DeviceActivationRequest.self, context: context)
            do {
                return JSONResponse(try await service().activateDevice(body, address: context.peer))
            } catch let error as ServiceError where error.code == .unauthorized {
                misses.record(address: AddressRateLimit.key(context.remoteAddress))
                throw error
            }
        }
    }

    /// Behind DeviceAuthenticate.
    func addDevice(to group: RouterGroup<ValidatorRequestContext>) {
        group.post(APIPath.deviceRequests.route()) { request, context in
            let body = try await request.decode(as: DeviceWaitRequest.self, context: context)
            let caller = try context.requireCaller()
            let owner = WaitOwner.device(id: caller.name, user: caller.users.first ?? "", address: AddressRateLimit.key(context.remoteAddress))
            return try await pending(caller: caller, owner: owner, wait: try Self.waitSeconds(body.wait), known: try Self.knownIDs(body.known),
                                     context: context)
        }
        group.post(APIPath.deviceAnswer.route()) { request, context in
            let body = try await request.decode(as: DeviceAnswerRequest.self, context: context)
            let caller = try context.requireCaller()
            let answer = try await service().answerPush(body, caller: caller)
            await waiters.notify(PushWaiters.request(body.id))
            if let user = caller.users.first { await waiters.notify(PushWaiters.user(user)) }
            return JSONResponse(answer)
        }
        group.post(APIPath.deviceBlocked.route()) { _, context in
            try await service().blockDevice(caller: try context.requireCaller())
            return JSONResponse(DeviceStateResponse(state: "blocked"))
        }
        group.post(APIPath.deviceUnlock.route()) { request, context in
            let body = try await request.decode(as: DeviceUnlockRequest.self, context: context)
            return JSONResponse(try await service().unlockDevice(body, caller: try context.requireCaller()))
        }
        group.post(APIPath.deviceRemove.route()) { _, context in
            try await service().deregisterDevice(caller: try context.requireCaller())
            return NoContent()
        }
    }

    /// `known`: at most 64 ids (a user has at most one pending request per host).
    private static func knownIDs(_ known: [String]?) throws(ServiceError) -> Set<String> {
        guard let known else { return [] }
        guard known.count <= 64, known.allSatisfy({ $0.utf8.count <= 64 }) else { throw ServiceError(.invalidInput, "known: at most 64 request ids") }
        return Set(known)
    }

    /// The user's pending requests at once when they differ from `known`, else when they change
    /// (a request arrives, or one is answered, cancelled, superseded), or after `wait`.
    private func pending(caller: Caller, owner: WaitOwner, wait: Double, known: Set<String>, context: ValidatorRequestContext) async throws -> Response {
        let deadline = Self.now + wait
        return try await polls.answer(context: context, waiters: waiters) {
            try await pendingStep(caller: caller, owner: owner, deadline: deadline, known: known)
        }
    }

    /// One look at the user's pending requests: the list, or the ticket to wait on and for how long.
    /// The ticket is the device's (`owner`): its waits are bounded per device, user and address.
    func pendingStep(caller: Caller, owner: WaitOwner, deadline: Double, known: Set<String>) async throws -> PollStep<DevicePushList> {
        let devices = try service()
        let ticket = try await ticket(PushWaiters.user(caller.users.first ?? ""), owner: owner)
        let list: DevicePushList
        do { list = try await devices.pendingPushes(caller: caller) } catch {
            await waiters.finish(ticket)
            throw error
        }
        let remaining = deadline - Self.now
        // A known request that expires changes nothing in the store: wake at its expiry.
        let expiry = list.requests.map { Double($0.expires) + 0.01 }.min().map { $0 - Self.now } ?? remaining
        guard Set(list.requests.map(\.id)) == known, remaining > 0, expiry > 0 else {
            await waiters.finish(ticket)
            return .done(list)
        }
        return .wait(ticket: ticket, seconds: min(remaining, expiry))
    }

    // MARK: admins

    func addAdmin(to group: RouterGroup<ValidatorRequestContext>) {
        group.post(APIPath.userDevices.route()) { request, context in
            let body = try await request.decode(as: DeviceAddRequest.self, context: context)
            return JSONResponse(try await service().addDevice(user: try context.pathParameter("user"), body, caller: try context.requireCaller()),
                                status: .created)
        }
        group.get(APIPath.devices.route()) { request, context in
            let user = request.uri.queryParameters["user"].map(String.init)
            return JSONResponse(try await service().devices(user: user, caller: try context.requireCaller()))
        }
        group.delete(APIPath.userDevice.route()) { _, context in
            try await service().removeDevice(user: try context.pathParameter("user"), device: try context.pathParameter("device"),
                                             caller: try context.requireCaller())
            return NoContent()
        }
        group.post(APIPath.userDeviceUnlockCode.route()) { _, context in
            JSONResponse(try await service().unlockCode(user: try context.pathParameter("user"), device: try context.pathParameter("device"),
                                                        caller: try context.requireCaller()))
        }
        group.post(APIPath.userDeviceCertificate.route()) { request, context in
            let body = try await request.decode(as: DeviceCertificateRequest.self, context: context)
            try await service().setCertificate(user: try context.pathParameter("user"), device: try context.pathParameter("device"), body,
                                               caller: try context.requireCaller())
            return NoContent()
        }
        group.post(APIPath.userPushUnblock.route()) { _, context in
            JSONResponse(try await service().unblockPush(user: try context.pathParameter("user"), caller: try context.requireCaller()))
        }
    }
}

/// Resolves `Authorization: Bearer sotp_d_…` to the device it belongs to.
struct DeviceAuthenticate: RouterMiddleware {
    typealias Context = ValidatorRequestContext

    let devices: (any DeviceService)?
    let limits: RateLimits
    let metrics: ValidatorMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let devices else { throw ServiceError(.notSupported, "push approval is not available with this store (docs/push.md)") }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else {
            metrics.authenticationFailures.increment()
            throw ServiceError(.unauthorized, "send the device credential as Authorization: Bearer <credential>")
        }
        let caller: Caller
        do {
            let credential = String(header.dropFirst(7))
            // A phone's page holds a session (docs/push.md "Phones without an app"), not a device credential.
            if credential.hasPrefix(WebSessionRules.prefix), let web = devices as? any WebDeviceService {
                caller = try await web.authenticateWebSession(credential, address: context.peer)
            } else {
                caller = try await devices.authenticateDevice(credential: credential, address: context.peer)
            }
        } catch {
            metrics.authenticationFailures.increment()
            context.logger.notice("refused device credential", metadata: ["peer": "\(context.peer)", "path": "\(request.uri.path)"])
            throw error
        }
        // Held to its request rate, as a host is (Authenticate).
        if !limits.allowDevice(caller.name) {
            metrics.rateLimited.increment()
            throw ServiceError(.rateLimited, "this device is over its request rate (rate_limit_device); slow down")
        }
        var context = context
        context.caller = caller
        return try await next(request, context)
    }
}
