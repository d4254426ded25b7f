import SecurOTPCore
import SecurOTPStore

/// Remote mode's security keys on the SQLite store (docs/fido.md, "Remote mode"): the
/// decisions are FidoDecisions'; here the rows are read and written, in one transaction per call.
extension LocalTokenService {
    /// Preflight's additions: whether the user holds a FIDO credential (a cloned one too: such a
    /// user is asked for the key, offered none and denied, never let through by `nullok`), and the user's
    /// methods when a policy or `methods=` sets them. Group policies are the host's to resolve
    /// (group names are the host's NSS'): the validator applies the user's own policy and `methods=`.
    static func addFidoAndMethods(_ response: inout PreflightResponse, store: Store, user: String, global: LoginMethods?) throws(StoreError) {
        if try !store.fidoCredentials(user: user).isEmpty { response.fido = true }
        let methods = try store.loginMethods(user: user, groups: { [] }, global: global)
        if let methods, !methods.explicit { return }
        response.methods = methods.map { $0.order.map(\.rawValue) } ?? []
    }

    public func fidoChallenge(_ request: FidoChallengeRequest, caller: Caller) async throws(ServiceError) -> FidoChallengeResponse {
        let user = try RequestRules.user(request.user)
        guard !request.origin.isEmpty, request.origin.utf8.count <= 255, (request.appid?.utf8.count ?? 0) <= 255 else {
            throw ServiceError(.invalidInput, "origin must be 1 to 255 characters, appid at most 255")
        }
        return try await run { (store, tables) throws(StoreError) in
            let now = Self.now()
            let locked = try store.userState(user).isLocked(at: now)
            let (pending, response) = try FidoDecisions.offer(user: user, host: caller.name, credentials: try store.fidoCredentials(user: user),
                                                              origin: request.origin, appID: request.appid, locked: locked, now: now)
            if let pending { try tables.insert(pending) }
            return response
        }
    }

    public func fidoVerify(_ request: FidoVerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let assertion = try FidoDecisions.Assertion(request)
        let policy = settings.policy
        return try await run { (store, tables) throws(StoreError) in
            try store.database.immediateTransaction { () throws(StoreError) -> VerifyResponse in
                let now = Self.now()
                let user = assertion.user
                let challenge = try tables.take(id: assertion.id, user: user, host: caller.name, now: now)
                let credential = try store.fidoCredentials(user: user).first { $0.serial == assertion.serial }
                let locked = try store.userState(user).isLocked(at: now)
                var verdict = FidoDecisions.decide(assertion, challenge: challenge, credential: credential, locked: locked)
                switch verdict.write {
                case .none: break
                case .markCloned(let serial): try store.markFidoCloned(user: user, serial: serial)
                case .counter(let serial, let from, let to):
                    if try !store.acceptFidoCounter(user: user, serial: serial, from: from, to: to, now: now) {
                        verdict = FidoDecisions.lostRace(assertion)
                    }
                }
                var response = verdict.response
                if verdict.countsFailure {
                    let (failures, lockedNow) = try store.recordFidoFailure(user: user, policy: policy, now: now)
                    response = FidoDecisions.counted(response, failures: failures, lockedNow: lockedNow)
                } else if response.result == .accept {
                    try store.clearFidoFailures(user: user, now: now)
                }
                try tables.append(AuditEntry(caller, "fido verify", user: user, serial: assertion.serial, result: response.result.rawValue,
                                             detail: verdict.detail, time: now))
                return response
            }
        }
    }
}

extension LocalTokenService {
    public func addFido(user: String, _ request: FidoAddRequest, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        let user = try RequestRules.user(user)
        guard ["enroll", "pamu2fcfg", "mapping-file"].contains(request.source) else {
            throw ServiceError(.invalidInput, "source must be enroll, pamu2fcfg or mapping-file")
        }
        guard !request.credentials.isEmpty, request.credentials.count <= FidoDecisions.maxOffered else {
            throw ServiceError(.invalidInput, "1 to \(FidoDecisions.maxOffered) credentials at a time")
        }
        var credentials: [FidoCredential] = []
        for (index, item) in request.credentials.enumerated() {
            guard !item.origin.isEmpty, item.origin.utf8.count <= 255 else { throw ServiceError(.invalidInput, "credential \(index + 1): origin must be 1 to 255 characters") }
            let (credential, problem) = FidoCredential.parse(field: Substring(item.credential), origin: item.origin)
            guard let credential else { throw ServiceError(.invalidInput, "credential \(index + 1): \(problem)") }
            credentials.append(credential)
        }
        let maxTokens = settings.maxTokens
        return try await run { (store, tables) throws(StoreError) in
            let now = Self.now()
            let added = try store.addFido(credentials, user: user, source: request.source, maxTokens: maxTokens, now: now)
            for credential in added {
                try tables.append(AuditEntry(caller, "fido add", user: user, serial: credential.serial, result: "ok", detail: request.source, time: now))
            }
            return FidoCredentialList(credentials: added.map(FidoCredentialInfo.init))
        }
    }

    public func fidoCredentials(user: String, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        let user = try RequestRules.user(user)
        return try await run { (store, _) throws(StoreError) in
            FidoCredentialList(credentials: try store.fidoCredentials(user: user).map(FidoCredentialInfo.init))
        }
    }
}
