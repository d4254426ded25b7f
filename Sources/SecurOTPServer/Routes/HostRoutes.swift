import Foundation
import Hummingbird
import SecurOTPService

/// What hosts (PAM modules) call: preflight before prompting, verify, and answer a challenge.
struct HostRoutes {
    let service: any TokenService
    let limits: RateLimits
    let metrics: ValidatorMetrics

    func add(to group: RouterGroup<ValidatorRequestContext>) {
        group.post("preflight") { request, context in
            let body = try await request.decode(as: PreflightRequest.self, context: context)
            let caller = try await admit(body.user, context: context, action: "preflight", countsAgainstUser: false)
            return JSONResponse(try await service.preflight(body, caller: caller))
        }
        group.post("verify") { request, context in
            let body = try await request.decode(as: VerifyRequest.self, context: context)
            let caller = try await admit(body.user, context: context, action: "verify", countsAgainstUser: true)
            return JSONResponse(counted(try await service.verify(body, caller: caller)))
        }
        group.post("verify/answer") { request, context in
            let body = try await request.decode(as: AnswerRequest.self, context: context)
            let caller = try await admit(body.user, context: context, action: "answer", countsAgainstUser: true)
            return JSONResponse(counted(try await service.answer(body, caller: caller)))
        }
    }

    /// The user name is valid (an invalid one is audited as an excerpt, then refused), the
    /// host may ask about this user (audited when not), and the user is under its rate.
    private func admit(_ user: String, context: ValidatorRequestContext, action: String, countsAgainstUser: Bool) async throws -> Caller {
        let caller = try context.requireCaller()
        do throws(ServiceError) {
            _ = try RequestRules.user(user)
        } catch {
            await audit(caller, action, user: user, result: "error", detail: "invalid user name")
            throw error
        }
        guard HostScope.allows(caller, user: user) else {
            await audit(caller, action, user: user, result: "denied", detail: "user outside the host's users and groups")
            try HostScope.check(caller, user: user)
            return caller
        }
        if countsAgainstUser, !limits.allowUser(user) {
            metrics.rateLimited.increment()
            throw ServiceError(.rateLimited, "too many verifications for \(user) right now; wait a minute")
        }
        return caller
    }

    private func audit(_ caller: Caller, _ action: String, user: String, result: String, detail: String) async {
        await service.record(AuditEntry(time: Int64(Date.now.timeIntervalSince1970), actorKind: caller.kind.rawValue, actor: caller.name,
                                        address: caller.address, action: action, user: user, serial: "", result: result, detail: detail))
    }

    private func counted(_ response: VerifyResponse) -> VerifyResponse {
        metrics.verification(response.result.rawValue)
        if response.reason?.hasPrefix("replayed") == true { metrics.verification("replay") }
        return response
    }
}
