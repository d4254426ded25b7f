import Foundation
import Hummingbird
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// What hosts (PAM modules) call: preflight before prompting, verify, and answer a challenge.
///
/// A user outside the host's `--users`/`--groups` is not told apart from an enrolled user:
/// preflight answers as for one with a 6-digit token (so the module prompts, with or without
/// nullok and forward_pass), and verify and answer reject after the same store work and
/// counting as a wrong code, without touching the user's failure count. Only the audit log
/// and the reason in the host's own log line say why.
struct HostRoutes {
    let service: any TokenService
    let limits: RateLimits
    let metrics: ValidatorMetrics
    let push: PushRoutes

    /// The preflight answer for a user the host may not verify: an enrolled user's, so that
    /// the prompt is the same (nullok never skips it; forward_pass sends 6 trailing digits).
    static let outOfScopePreflight = PreflightResponse(hasTokens: true, codeDigits: [6], holdsFactor: true)
    /// The verification answer for such a user: a plain rejection, as for a wrong code.
    static let outOfScopeRejection = VerifyResponse(result: .reject, reason: outOfScopeReason)
    static let outOfScopeReason = "user outside the host's users and groups"

    func add(to group: RouterGroup<ValidatorRequestContext>) {
        group.post(APIPath.preflight.route()) { request, context in
            let body = try await request.decode(as: PreflightRequest.self, context: context)
            let (caller, allowed) = try await admit(body.user, context: context, action: "preflight", countsAgainstUser: false)
            var answer = try await service.preflight(body, caller: caller)
            guard allowed else { return JSONResponse(Self.outOfScopePreflight) }
            // Additive: absent unless push approval is possible (docs/push.md) and among the
            // user's methods (a refused push looks like no device).
            let pushAllowed = answer.methods.map { $0.contains(LoginMethod.push.rawValue) } ?? true
            if pushAllowed, let devices = push.devices, try await devices.pushAvailable(user: body.user) { answer.push = true }
            return JSONResponse(answer)
        }
        addPush(to: group)
        addFido(to: group)
        group.post(APIPath.verify.route()) { request, context in
            let body = try await request.decode(as: VerifyRequest.self, context: context)
            let (caller, allowed) = try await admit(body.user, context: context, action: "verify", countsAgainstUser: true)
            guard allowed else { return JSONResponse(await counted(try await outOfScope(body.user, caller: caller), user: body.user, context: context)) }
            // docs/push.md, "Offline approval": the push prompt's answer is first the request's
            // offline response; if not, the request is cancelled and the answer is a passcode.
            // An offline response is typed like a passcode: only for a user who may use otp
            // (else the passcode verification below refuses it as for a user without a token).
            if let pushID = body.pushId {
                if try await service.methodCheck(.otp, user: body.user, caller: caller, action: "push offline").refusal == nil {
                    if let accepted = try await push.verifyOffline(body, caller: caller) {
                        return JSONResponse(await counted(accepted, user: body.user, context: context))
                    }
                } else {
                    // Withdrawn all the same (as verifyOffline would), so that it cannot be
                    // approved later on the phone; an unknown id changes nothing here either.
                    _ = try? await push.cancel(PushCancelRequest(id: pushID), caller: caller)
                }
            }
            // The store checks otp against the user's methods itself (MethodRules), in the
            // verification's own read.
            return JSONResponse(await counted(try await service.verify(body, caller: caller), user: body.user, context: context))
        }
        group.post(APIPath.verifyAnswer.route()) { request, context in
            let body = try await request.decode(as: AnswerRequest.self, context: context)
            let (caller, allowed) = try await admit(body.user, context: context, action: "answer", countsAgainstUser: true)
            guard allowed else { return JSONResponse(await counted(try await outOfScope(body.user, caller: caller), user: body.user, context: context)) }
            return JSONResponse(await counted(try await service.answer(body, caller: caller), user: body.user, context: context))
        }
    }

    /// docs/push.md: a host asks the user's devices and waits for the answer. A user outside the
    /// host's scope gets the refusal of a user without devices.
    private func addPush(to group: RouterGroup<ValidatorRequestContext>) {
        group.post(APIPath.push.route()) { request, context in
            let body = try await request.decode(as: PushOpenRequest.self, context: context)
            let (caller, allowed) = try await admit(body.user, context: context, action: "push", countsAgainstUser: true)
            guard allowed else { throw ServiceError(.conflict, PushDecisions.noActiveDevice(user: body.user).message) }
            // Push not among the user's methods: the refusal of a user without a device (audited).
            let check = try await service.methodCheck(.push, user: body.user, caller: caller, action: "push")
            guard check.refusal == nil else { throw ServiceError(.conflict, PushDecisions.noActiveDevice(user: body.user).message) }
            var opened = try await push.open(body, caller: caller)
            // No offline approval (typed like a passcode) for a user who may not use otp.
            if !MethodRules.allowsPasscodes(check.methods) { opened.offline = nil }
            return JSONResponse(opened, status: .created)
        }
        group.post(APIPath.pushWait.route()) { request, context in
            let body = try await request.decode(as: PushWaitRequest.self, context: context)
            return try await push.wait(body, caller: try context.requireCaller(), context: context)
        }
        group.post(APIPath.pushResult.route()) { request, context in
            let body = try await request.decode(as: PushResultRequest.self, context: context)
            try await push.result(body, caller: try context.requireCaller())
            return NoContent()
        }
        group.post(APIPath.pushCancel.route()) { request, context in
            let body = try await request.decode(as: PushCancelRequest.self, context: context)
            return JSONResponse(try await push.cancel(body, caller: try context.requireCaller()))
        }
    }

    /// docs/fido.md, "Remote mode": the validator issues the challenge and checks the
    /// assertion the host's key made. A user outside the host's scope is offered no credential
    /// (as a user without one) and an assertion for one is rejected as a wrong code.
    private func addFido(to group: RouterGroup<ValidatorRequestContext>) {
        group.post(APIPath.fidoChallenge.route()) { request, context in
            let body = try await request.decode(as: FidoChallengeRequest.self, context: context)
            let (caller, allowed) = try await admit(body.user, context: context, action: "fido challenge", countsAgainstUser: true)
            // fido not among the user's methods: the answer of a user without a credential for
            // this origin (a fresh id, nothing offered, no challenge stored), audited.
            if allowed, try await service.methodCheck(.fido, user: body.user, caller: caller, action: "fido challenge").refusal != nil {
                return JSONResponse(try Self.noCredentialOffered(body, caller: caller))
            }
            var answer = try await service.fidoChallenge(body, caller: caller)
            if !allowed { answer.credentials = [] }
            return JSONResponse(answer)
        }
        group.post(APIPath.fidoVerify.route()) { request, context in
            let body = try await request.decode(as: FidoVerifyRequest.self, context: context)
            let (caller, allowed) = try await admit(body.user, context: context, action: "fido verify", countsAgainstUser: true)
            guard allowed else { return JSONResponse(await counted(try await outOfScope(body.user, caller: caller), user: body.user, context: context)) }
            // A challenge issued before fido left the user's methods is not taken: the answer
            // (and count) of an unknown challenge, as for a user without a key.
            var assertion = body
            if try await service.methodCheck(.fido, user: body.user, caller: caller, action: "fido verify").refusal != nil {
                assertion.id = Self.noChallengeID
            }
            return JSONResponse(await counted(try await service.fidoVerify(assertion, caller: caller), user: body.user, context: context))
        }
    }

    /// A challenge id no challenge has (ids are `PendingChallenge.freshID()`'s, never this).
    static let noChallengeID = "-"

    /// The challenge of a user without a credential for the host's origin: a fresh id and
    /// client data hash, nothing offered, nothing stored; a bad origin refused as the store would.
    private static func noCredentialOffered(_ body: FidoChallengeRequest, caller: Caller) throws -> FidoChallengeResponse {
        let user = try FidoDecisions.challengeUser(body)
        do throws(StoreError) {
            return try FidoDecisions.offer(user: user, host: caller.name, credentials: [], origin: body.origin, appID: body.appid,
                                           locked: false, now: Int64(Date.now.timeIntervalSince1970)).1
        } catch {
            throw ServiceError(error)
        }
    }

    /// The user name is valid (an invalid one is audited as an excerpt, then refused), the
    /// user is under its verification rate, and whether the host may ask about this user
    /// (audited when not).
    private func admit(_ user: String, context: ValidatorRequestContext, action: String, countsAgainstUser: Bool) async throws -> (Caller, Bool) {
        let caller = try context.requireCaller()
        do throws(ServiceError) {
            _ = try RequestRules.user(user)
        } catch {
            await audit(caller, action, user: user, result: "error", detail: "invalid user name")
            throw error
        }
        if countsAgainstUser, !limits.allowUser(user) {
            metrics.rateLimited.increment()
            throw ServiceError(.rateLimited, "too many verifications for \(user) right now; wait a minute")
        }
        guard HostScope.allows(caller, user: user) else {
            await audit(caller, action, user: user, result: "denied", detail: Self.outOfScopeReason)
            return (caller, false)
        }
        return (caller, true)
    }

    /// A wrong code's work for a user the host may not verify: the user's tokens are read
    /// (as a verification reads them) and the audit entry was written (as a verification
    /// writes one); the user's failure count is not the host's to raise.
    private func outOfScope(_ user: String, caller: Caller) async throws -> VerifyResponse {
        _ = try await service.preflight(PreflightRequest(user: user), caller: caller)
        return Self.outOfScopeRejection
    }

    private func audit(_ caller: Caller, _ action: String, user: String, result: String, detail: String) async {
        await service.record(AuditEntry(caller, action, user: user, result: result, detail: detail, time: Int64(Date.now.timeIntervalSince1970)))
    }

    /// Every verification's answer passes here: counted in the metrics, and an accept clears
    /// the user's push limit (any successful login does; PushRoutes.loginSucceeded).
    private func counted(_ response: VerifyResponse, user: String, context: ValidatorRequestContext) async -> VerifyResponse {
        metrics.verification(response.result.rawValue)
        if response.outcome == .replayed { metrics.verification("replay") }
        if response.result == .accept { await push.loginSucceeded(user: user, logger: context.logger) }
        return response
    }
}
