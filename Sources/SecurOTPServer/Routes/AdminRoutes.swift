import Foundation
import Hummingbird
import SecurOTPCore
import SecurOTPService

/// What admins call: every `securotp` operation, plus hosts, admins and the audit log.
struct AdminRoutes {
    let service: any TokenService
    let push: PushRoutes

    func add(to group: RouterGroup<ValidatorRequestContext>) {
        addTokens(to: group)
        addAccess(to: group)
        push.addAdmin(to: group)
    }

    private func addTokens(to group: RouterGroup<ValidatorRequestContext>) {
        group.get(APIPath.tokens.route()) { request, context in
            let user = request.uri.queryParameters["user"].map(String.init)
            return JSONResponse(try await service.tokens(user: user, caller: try context.requireCaller()))
        }
        group.post(APIPath.userTokens.route()) { request, context in
            let body = try await request.decode(as: EnrollRequest.self, context: context)
            return JSONResponse(try await service.enroll(user: try user(context), body, caller: try context.requireCaller()), status: .created)
        }
        group.delete(APIPath.userTokens.route()) { _, context in
            JSONResponse(try await service.reset(user: try user(context), caller: try context.requireCaller()))
        }
        group.post(APIPath.userTokensImport.route()) { request, context in
            let body = try await request.decode(as: ImportRequest.self, context: context)
            return JSONResponse(try await service.importTokens(user: try user(context), body, caller: try context.requireCaller()), status: .created)
        }
        // FIDO credentials (docs/fido.md, "Remote mode"): `securotp --server URL import`, `fido enroll`, `fido export`.
        group.post(APIPath.userFido.route()) { request, context in
            let body = try await request.decode(as: FidoAddRequest.self, context: context)
            return JSONResponse(try await service.addFido(user: try user(context), body, caller: try context.requireCaller()), status: .created)
        }
        group.get(APIPath.userFido.route()) { _, context in
            JSONResponse(try await service.fidoCredentials(user: try user(context), caller: try context.requireCaller()))
        }
        // Login-method policies (`securotp --server URL policy`; docs/configuration.md, "Login methods").
        group.get(APIPath.policies.route()) { _, context in
            JSONResponse(try await service.methodPolicies(caller: try context.requireCaller()))
        }
        group.put(APIPath.policy.route()) { request, context in
            let body = try await request.decode(as: MethodPolicyRequest.self, context: context)
            return JSONResponse(try await service.setMethodPolicy(subject: try subject(context), body, caller: try context.requireCaller()))
        }
        group.delete(APIPath.policy.route()) { _, context in
            try await service.clearMethodPolicy(subject: try subject(context), caller: try context.requireCaller())
            return NoContent()
        }
        group.patch(APIPath.userToken.route()) { request, context in
            let body = try await request.decode(as: NicknameRequest.self, context: context)
            try await service.setNickname(user: try user(context), serial: try serial(context), body, caller: try context.requireCaller())
            return NoContent()
        }
        group.delete(APIPath.userToken.route()) { _, context in
            try await service.deleteToken(user: try user(context), serial: try serial(context), caller: try context.requireCaller())
            return NoContent()
        }
        group.put(APIPath.userTokenPIN.route()) { request, context in
            let body = try await request.decode(as: PINRequest.self, context: context)
            try await service.setPIN(user: try user(context), serial: try serial(context), body, caller: try context.requireCaller())
            return NoContent()
        }
        group.delete(APIPath.userTokenPIN.route()) { _, context in
            try await service.clearPIN(user: try user(context), serial: try serial(context), caller: try context.requireCaller())
            return NoContent()
        }
        group.post(APIPath.userTokenPINRequire.route()) { _, context in
            try await service.requirePIN(user: try user(context), serial: try serial(context), caller: try context.requireCaller())
            return NoContent()
        }
        group.post(APIPath.userTokenResync.route()) { request, context in
            let body = try await request.decode(as: ResyncRequest.self, context: context)
            return JSONResponse(try await service.resync(user: try user(context), serial: try serial(context), body, caller: try context.requireCaller()))
        }
        group.post(APIPath.userUnlock.route()) { _, context in
            JSONResponse(try await service.unlock(user: try user(context), caller: try context.requireCaller()))
        }
        group.post(APIPath.userRecoveryCodes.route()) { request, context in
            let body = try await request.decode(as: RecoveryCodesRequest.self, context: context)
            return JSONResponse(try await service.recoveryCodes(user: try user(context), body, caller: try context.requireCaller()), status: .created)
        }
        group.get(APIPath.userBindingID.route()) { _, context in
            JSONResponse(try await service.bindingID(user: try user(context), caller: try context.requireCaller()))
        }
        group.get(APIPath.status.route()) { _, context in
            JSONResponse(try await service.status(caller: try context.requireCaller()))
        }
    }

    private func addAccess(to group: RouterGroup<ValidatorRequestContext>) {
        for kind in [CredentialKind.host, .admin] {
            let (collection, member): (APIPath, APIPath) = kind == .host ? (.hosts, .host) : (.admins, .admin)
            group.post(collection.route()) { request, context in
                let body = try await request.decode(as: CredentialRequest.self, context: context)
                return JSONResponse(try await service.addCredential(kind: kind, body, caller: try context.requireCaller()), status: .created)
            }
            group.get(collection.route()) { _, context in
                JSONResponse(try await service.credentials(kind: kind, caller: try context.requireCaller()))
            }
            group.delete(member.route()) { _, context in
                try await service.revokeCredential(kind: kind, name: try context.pathParameter("name"), caller: try context.requireCaller())
                return NoContent()
            }
        }
        group.get(APIPath.audit.route()) { request, context in
            let user = request.uri.queryParameters["user"].map(String.init)
            let limit = request.uri.queryParameters["limit"].flatMap { Int(String($0)) } ?? 100
            return JSONResponse(try await service.audit(user: user, limit: limit, caller: try context.requireCaller()))
        }
    }

    private func user(_ context: ValidatorRequestContext) throws -> String { try context.pathParameter("user") }
    private func serial(_ context: ValidatorRequestContext) throws -> String { try context.pathParameter("serial") }
    /// A user, or `@group` (`%40group` as a client may encode it).
    private func subject(_ context: ValidatorRequestContext) throws -> String { try context.pathParameter("subject") }
}
