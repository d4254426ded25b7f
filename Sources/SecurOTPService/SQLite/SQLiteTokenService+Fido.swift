import SecurOTPCore
import SecurOTPStore

/// Remote mode's security keys on the SQLite store (docs/fido.md, "Remote mode"): the
/// decisions are FidoDecisions'; here the rows are read and written, in one transaction per call.
extension SQLiteTokenService {
    public func fidoChallenge(_ request: FidoChallengeRequest, caller: Caller) async throws(ServiceError) -> FidoChallengeResponse {
        let user = try FidoDecisions.challengeUser(request)
        return try await run { (store, tables) throws(StoreError) in
            let now = self.now()
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
                let now = self.now()
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
                try tables.append(FidoDecisions.verifiedAudit(caller, assertion, response, verdict, now: now))
                return response
            }
        }
    }
}

extension SQLiteTokenService {
    public func addFido(user: String, _ request: FidoAddRequest, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        let user = try RequestRules.user(user)
        let credentials = try FidoDecisions.credentials(request)
        let maxTokens = settings.maxTokens
        return try await run { (store, tables) throws(StoreError) in
            let now = self.now()
            let added = try store.addFido(credentials, user: user, source: request.source, maxTokens: maxTokens, now: now)
            for credential in added {
                try tables.append(FidoDecisions.addedAudit(caller, user: user, credential, source: request.source, now: now))
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
