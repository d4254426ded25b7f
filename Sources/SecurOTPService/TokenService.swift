import SecurOTPStore

/// Everything a caller can ask of securotp, whichever store answers: the SQLite store on this
/// machine (`SQLiteTokenService`), PostgreSQL shared by several validator nodes
/// (`PostgresTokenService`), or a remote validator over HTTPS (`RemoteTokenService`).
///
/// `securotpd` serves the /v1 API by calling a service; `securotp` runs its commands against
/// one (`--state-dir`, `--database` or `--server`). The three give the same outcomes for the
/// same input: verification decisions come from one engine in SecurOTPStore.
///
/// Authorisation (which caller may call what, which users a host may see) is the server's
/// job before it calls in; every implementation writes the audit log for what it does.
public protocol TokenService: Sendable {
    /// "sqlite", "postgres" or "remote".
    var storeKind: String { get }
    /// The time every decision of this backend reads (ServiceClock: the wall clock but in tests).
    var clock: ServiceClock { get }

    // MARK: hosts

    func preflight(_ request: PreflightRequest, caller: Caller) async throws(ServiceError) -> PreflightResponse
    func verify(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse
    func answer(_ request: AnswerRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse
    /// docs/fido.md, "Remote mode": a security-key challenge for the user, and its assertion.
    func fidoChallenge(_ request: FidoChallengeRequest, caller: Caller) async throws(ServiceError) -> FidoChallengeResponse
    func fidoVerify(_ request: FidoVerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse
    /// A user's FIDO credentials, added (all or none) and listed (`securotp import`, `fido enroll`, `fido export`).
    func addFido(user: String, _ request: FidoAddRequest, caller: Caller) async throws(ServiceError) -> FidoCredentialList
    func fidoCredentials(user: String, caller: Caller) async throws(ServiceError) -> FidoCredentialList
    /// The methods the validator lets `user` use, in order (docs/configuration.md, "Login
    /// methods"): the user's own policy, else `methods=`, else the standard order; nil: none
    /// left. Host calls are checked against it (MethodRules).
    func loginMethods(user: String, caller: Caller) async throws(ServiceError) -> LoginMethods?

    /// Login-method policies (`securotp policy`): every one, set one (a user or `@group`),
    /// remove one (`not_found` when there is none).
    func methodPolicies(caller: Caller) async throws(ServiceError) -> MethodPolicyList
    func setMethodPolicy(subject: String, _ request: MethodPolicyRequest, caller: Caller) async throws(ServiceError) -> MethodPolicyInfo
    func clearMethodPolicy(subject: String, caller: Caller) async throws(ServiceError)

    // MARK: tokens

    func enroll(user: String, _ request: EnrollRequest, caller: Caller) async throws(ServiceError) -> EnrollResponse
    func importTokens(user: String, _ request: ImportRequest, caller: Caller) async throws(ServiceError) -> TokenList
    /// One user's tokens, or everyone's when `user` is nil; `userLocked` filled in.
    func tokens(user: String?, caller: Caller) async throws(ServiceError) -> TokenList
    func setNickname(user: String, serial: String, _ request: NicknameRequest, caller: Caller) async throws(ServiceError)
    func deleteToken(user: String, serial: String, caller: Caller) async throws(ServiceError)
    func reset(user: String, caller: Caller) async throws(ServiceError) -> ResetResponse
    func unlock(user: String, caller: Caller) async throws(ServiceError) -> UnlockResponse
    func setPIN(user: String, serial: String, _ request: PINRequest, caller: Caller) async throws(ServiceError)
    func clearPIN(user: String, serial: String, caller: Caller) async throws(ServiceError)
    func requirePIN(user: String, serial: String, caller: Caller) async throws(ServiceError)
    func resync(user: String, serial: String, _ request: ResyncRequest, caller: Caller) async throws(ServiceError) -> ResyncResponse
    func recoveryCodes(user: String, _ request: RecoveryCodesRequest, caller: Caller) async throws(ServiceError) -> RecoveryCodesResponse
    func bindingID(user: String, caller: Caller) async throws(ServiceError) -> BindingIDResponse
    func status(caller: Caller) async throws(ServiceError) -> StatusResponse

    // MARK: access

    func addCredential(kind: CredentialKind, _ request: CredentialRequest, caller: Caller) async throws(ServiceError) -> CredentialCreated
    func credentials(kind: CredentialKind, caller: Caller) async throws(ServiceError) -> CredentialList
    func revokeCredential(kind: CredentialKind, name: String, caller: Caller) async throws(ServiceError)
    /// The caller a bearer credential belongs to; `unauthorized` for unknown, malformed or
    /// revoked credentials (one message for all, so nothing is learned from it).
    func authenticate(credential: String, address: String) async throws(ServiceError) -> Caller
    func audit(user: String?, limit: Int, caller: Caller) async throws(ServiceError) -> AuditList
    /// Adds an entry the server decides on by itself (refused credentials, forbidden users).
    func record(_ entry: AuditEntry) async
    /// Deletes audit entries older than `time`; returns how many went.
    func pruneAudit(before time: Int64) async throws(ServiceError) -> Int

    // MARK: operations

    /// Throws when the store cannot answer (health checks, start-up).
    func checkHealth() async throws(ServiceError)
    /// Finishes work in flight and releases the store.
    func close() async
}

extension TokenService {
    /// A store that keeps no FIDO credentials (both of securotpd's do; test doubles may not)
    /// offers none: its preflight never says `fido`, so a host asks for no touch.
    public func fidoChallenge(_ request: FidoChallengeRequest, caller: Caller) async throws(ServiceError) -> FidoChallengeResponse {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no FIDO credentials")
    }

    public func fidoVerify(_ request: FidoVerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no FIDO credentials")
    }

    public func addFido(user: String, _ request: FidoAddRequest, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no FIDO credentials")
    }

    public func fidoCredentials(user: String, caller: Caller) async throws(ServiceError) -> FidoCredentialList {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no FIDO credentials")
    }

    public func methodPolicies(caller: Caller) async throws(ServiceError) -> MethodPolicyList {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no login-method policies")
    }

    public func setMethodPolicy(subject: String, _ request: MethodPolicyRequest, caller: Caller) async throws(ServiceError) -> MethodPolicyInfo {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no login-method policies")
    }

    public func clearMethodPolicy(subject: String, caller: Caller) async throws(ServiceError) {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no login-method policies")
    }

    /// A store that keeps no policies cannot say which methods a user may use: host calls fail
    /// closed (RemoteTokenService is a client, never behind the host routes).
    public func loginMethods(user: String, caller: Caller) async throws(ServiceError) -> LoginMethods? {
        throw ServiceError(.notSupported, "this validator's store (\(storeKind)) keeps no login methods")
    }
}

public enum CredentialKind: String, Sendable, Codable, CaseIterable {
    /// `device`: a push-approval device's credential (`sotp_d_…`), kept with the device
    /// (DeviceService), never in the credentials table.
    case host, admin, device
}

extension TokenService {
    /// A backend that decides nothing by time itself (the remote client) reads the wall clock.
    public var clock: ServiceClock { .wall }
}
