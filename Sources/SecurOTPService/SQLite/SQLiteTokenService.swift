import Foundation
import SecurOTPCore
import SecurOTPStore

/// The TokenService of the SQLite store on this machine: `securotp` against
/// /var/lib/securotp (or `--state-dir`), and `securotpd` with one node. Every call runs on the
/// store's own thread (StoreExecutor), in a savepoint of a group-committed transaction, with
/// its audit entry in the same transaction.
public final class SQLiteTokenService: TokenService {
    public let storeKind = "sqlite"
    let settings: Settings
    /// Push approval's settings (securotpd.conf; docs/push.md).
    public let pushPolicy: PushPolicy
    private let executor: StoreExecutor
    private let credentials: CredentialReader
    private let lastTouch = CredentialUse()
    /// PushChangeFeed in-process (SQLiteTokenService+Push.swift).
    let pushChanges = PushChangeRelay()
    public let clock: ServiceClock

    /// Opens the store `settings.paths` names, migrating an older schema (this is the admin
    /// side: the CLI and securotpd); with `create`, first makes a missing one.
    /// `backgroundCheckpoints`: a long-lived server (securotpd) checkpoints the WAL from a
    /// second connection instead of in its commits (StoreExecutor).
    public init(settings: Settings, create: Bool = false, backgroundCheckpoints: Bool = false,
                pushPolicy: PushPolicy = PushPolicy(), clock: ServiceClock = .wall) throws(ServiceError) {
        self.settings = settings
        self.pushPolicy = pushPolicy
        self.clock = clock
        do {
            let store = try Store.open(settings.paths, create ? .create : .migrate)
            credentials = try CredentialReader(path: settings.paths.database)
            executor = StoreExecutor(store: store, backgroundCheckpoints: backgroundCheckpoints)
        } catch {
            throw ServiceError(error)
        }
    }

    /// Finishes queued work, checkpoints the WAL into the database and stops the store thread.
    public func close() async { executor.stop() }

    public func checkHealth() async throws(ServiceError) {
        _ = try await run { (store, _) throws(StoreError) in try store.hasActiveTokens(user: Store.unresolvedUsersKey) }
    }

    func now() -> Int64 { clock.now() }

    /// Runs `body` on the store thread with store errors turned into service errors.
    func run<R: Sendable>(_ body: @escaping (Store, AccessTables) throws(StoreError) -> R) async throws(ServiceError) -> R {
        try await executor.run { (store) throws(ServiceError) -> R in
            do throws(StoreError) { return try body(store, AccessTables(db: store.database)) } catch { throw ServiceError(error) }
        }
    }

    func runService<R: Sendable>(_ body: @escaping (Store, AccessTables) throws(ServiceError) -> R) async throws(ServiceError) -> R {
        try await executor.run { (store) throws(ServiceError) -> R in try body(store, AccessTables(db: store.database)) }
    }

    // MARK: hosts

    public func preflight(_ request: PreflightRequest, caller: Caller) async throws(ServiceError) -> PreflightResponse {
        let user = try RequestRules.user(request.user)
        let groups = try MethodRules.policyGroups(request.groups)
        let policy = settings.policy
        let globalMethods = settings.methods
        return try await run { (store, tables) throws(StoreError) in
            let active = try store.tokens(user: user).filter(\.isActive)
            // With the groups the host named (MethodRules.methods).
            let methods = try Self.loginMethods(store, user: user, groups: groups, global: globalMethods)
            let passcodesAllowed = MethodRules.allowsPasscodes(methods)
            // Without otp the module drops its offline cache (and the codes it used offline,
            // which only a verify would report), so the host's reservations go now: no code
            // typed offline can be accepted online once otp is allowed again.
            if !passcodesAllowed { try tables.dropReservations(host: caller.name, user: user) }
            var response = try Self.storage(store, tables).preflight(user: user, caller: caller, engine: store.engine, policy: policy, active: active,
                                                                     passcodesAllowed: passcodesAllowed, now: self.now())
            // A cloned credential counts too: such a user is asked for the key and denied,
            // never let through by `nullok`.
            if try !store.fidoCredentials(user: user).isEmpty { response.fido = true }
            response.methods = MethodRules.preflightMethods(methods)
            // Holding, not using: a blocked device or a cloned key keeps the user a holder.
            response.holdsFactor = try store.holdsFactor(user: user)
            return response
        }
    }

    public func verify(_ request: VerifyRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        var call = try VerifyCall(request, caller: caller)
        let policy = settings.policy
        let globalMethods = settings.methods
        return try await run { (store, tables) throws(StoreError) in
            // The same store work for every user: the policy is read, then the tokens.
            call.passcodeRefusal = MethodRules.refusal(.otp, try Self.loginMethods(store, user: call.user, global: globalMethods))
            // Offline codes are passcodes: the host's reservations for the user go with otp.
            if call.passcodeRefusal != nil { try tables.dropReservations(host: call.caller.name, user: call.user) }
            return try Self.storage(store, tables).verify(call, engine: store.engine, policy: policy, now: self.now())
        }
    }

    public func loginMethods(user: String, caller: Caller) async throws(ServiceError) -> LoginMethods? {
        let user = try RequestRules.user(user)
        let globalMethods = settings.methods
        return try await run { (store, _) throws(StoreError) in try Self.loginMethods(store, user: user, global: globalMethods) }
    }

    public func methodPolicies(caller: Caller) async throws(ServiceError) -> MethodPolicyList {
        try await run { (store, _) throws(StoreError) in
            MethodPolicyList(policies: try store.methodPolicies().map { PolicyRules.info(subject: $0.subject, text: $0.methods) })
        }
    }

    public func setMethodPolicy(subject: String, _ request: MethodPolicyRequest, caller: Caller) async throws(ServiceError) -> MethodPolicyInfo {
        let subject = try PolicyRules.subject(subject)
        let methods = try PolicyRules.methods(request)
        return try await run { (store, tables) throws(StoreError) in
            try store.setMethodPolicy(subject, methods)
            try tables.append(AuditEntry(caller, "policy set", user: subject, result: "ok", detail: methods.text, time: self.now()))
            return PolicyRules.info(subject: subject, text: methods.text)
        }
    }

    public func clearMethodPolicy(subject: String, caller: Caller) async throws(ServiceError) {
        let subject = try PolicyRules.subject(subject)
        let removed = try await run { (store, tables) throws(StoreError) -> Bool in
            guard try store.clearMethodPolicy(subject) else { return false }
            try tables.append(AuditEntry(caller, "policy clear", user: subject, result: "ok", time: self.now()))
            return true
        }
        guard removed else { throw ServiceError(.notFound, "\(subject) has no policy") }
    }

    /// The user's own policy, else `methods=` (or the standard order) narrowed by the policies
    /// of `groups`, the host's word (MethodRules.methods). The rows are read as in local mode
    /// (Store.applicablePolicies): a store without policies costs one lookup, not one per group.
    static func loginMethods(_ store: Store, user: String, groups: [String] = [], global: LoginMethods?) throws(StoreError) -> LoginMethods? {
        let policies = try store.applicablePolicies(user: user, groups: { groups })
        return MethodRules.methods(own: policies.own, groups: policies.groups, global: global)
    }

    public func answer(_ request: AnswerRequest, caller: Caller) async throws(ServiceError) -> VerifyResponse {
        let call = try AnswerCall(request, caller: caller)
        let policy = settings.policy
        return try await run { (store, tables) throws(StoreError) in
            try Self.storage(store, tables).answer(call, engine: store.engine, policy: policy, now: self.now())
        }
    }

    private static func storage(_ store: Store, _ tables: AccessTables) -> SQLiteVerificationStorage {
        SQLiteVerificationStorage(store: store, tables: tables)
    }

    // MARK: tokens

    public func enroll(user: String, _ request: EnrollRequest, caller: Caller) async throws(ServiceError) -> EnrollResponse {
        let user = try RequestRules.user(user)
        let token = try NewTokens.enrolled(request)
        let maxTokens = settings.maxTokens
        return try await run { (store, tables) throws(StoreError) in
            let now = self.now()
            let record = try store.add([token], user: user, maxTokens: maxTokens, now: now)[0]
            try tables.append(AuditEntry(caller, "enroll", user: user, serial: record.serial, result: "ok", detail: record.kind.rawValue, time: now))
            return EnrollResponse(token: TokenInfo(record), secret: Base32.encode(token.seed))
        }
    }

    public func importTokens(user: String, _ request: ImportRequest, caller: Caller) async throws(ServiceError) -> TokenList {
        let user = try RequestRules.user(user)
        let maxTokens = settings.maxTokens
        return try await runService { (store, tables) throws(ServiceError) -> TokenList in
            let now = self.now()
            let tokens = try NewTokens.imported(request, bindingID: store.bindingID(user: user), now: now)
            return try Self.storeCall { () throws(StoreError) -> TokenList in
                let records = try store.add(tokens, user: user, maxTokens: maxTokens, now: now)
                for record in records {
                    try tables.append(AuditEntry(caller, "import", user: user, serial: record.serial, result: "ok", detail: record.source, time: now))
                }
                return TokenList(tokens: records.map { TokenInfo($0) })
            }
        }
    }

    public func tokens(user: String?, caller: Caller) async throws(ServiceError) -> TokenList {
        if let user { _ = try RequestRules.user(user) }
        return try await run { (store, _) throws(StoreError) in
            let locked = Set(try store.lockedUsers(now: self.now()))
            return TokenList(tokens: try store.tokens(user: user).map { TokenInfo($0, userLocked: locked.contains($0.user)) })
        }
    }

    public func setNickname(user: String, serial: String, _ request: NicknameRequest, caller: Caller) async throws(ServiceError) {
        try await change(user: user, serial: serial, action: "nickname", caller: caller) { (store) throws(StoreError) in
            try store.setNickname(user: user, serial: serial, nickname: request.nickname)
        }
    }

    public func deleteToken(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await change(user: user, serial: serial, action: "delete", caller: caller) { (store) throws(StoreError) in
            try store.delete(user: user, serial: serial)
            try AccessTables(db: store.database).dropReservations(user: user, serial: serial)
        }
    }

    public func reset(user: String, caller: Caller) async throws(ServiceError) -> ResetResponse {
        let user = try RequestRules.user(user)
        return try await run { (store, tables) throws(StoreError) in
            let removed = try store.reset(user: user)
            try tables.dropReservations(user: user)
            try tables.append(AuditEntry(caller, "reset", user: user, serial: "", result: "ok", detail: "\(removed) tokens removed", time: self.now()))
            return ResetResponse(removed: removed)
        }
    }

    public func unlock(user: String, caller: Caller) async throws(ServiceError) -> UnlockResponse {
        let user = try RequestRules.user(user)
        return try await run { (store, tables) throws(StoreError) in
            let now = self.now()
            let wasLocked = try store.unlock(user: user, now: now)
            try tables.append(AuditEntry(caller, "unlock", user: user, serial: "", result: "ok", detail: wasLocked ? "was locked" : "was not locked", time: now))
            return UnlockResponse(wasLocked: wasLocked)
        }
    }

    public func setPIN(user: String, serial: String, _ request: PINRequest, caller: Caller) async throws(ServiceError) {
        var pin = Array(request.pin.utf8)
        defer { for index in pin.indices { pin[index] = 0 } }
        let copy = pin
        try await change(user: user, serial: serial, action: "pin set", caller: caller) { (store) throws(StoreError) in
            try copy.withUnsafeBufferPointer { (bytes) throws(StoreError) in try store.setPIN(user: user, serial: serial, pin: bytes) }
        }
    }

    public func clearPIN(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await change(user: user, serial: serial, action: "pin clear", caller: caller) { (store) throws(StoreError) in
            try store.clearPIN(user: user, serial: serial)
        }
    }

    public func requirePIN(user: String, serial: String, caller: Caller) async throws(ServiceError) {
        try await change(user: user, serial: serial, action: "pin require", caller: caller) { (store) throws(StoreError) in
            try store.requirePIN(user: user, serial: serial)
        }
    }

    public func resync(user: String, serial: String, _ request: ResyncRequest, caller: Caller) async throws(ServiceError) -> ResyncResponse {
        let user = try RequestRules.user(user)
        return try await run { (store, tables) throws(StoreError) in
            let now = self.now()
            let result = try store.resync(user: user, serial: serial, first: Array(request.first.utf8), second: Array(request.second.utf8), now: now)
            try tables.append(AuditEntry(caller, "resync", user: user, serial: serial, result: "ok", detail: result.description, time: now))
            return ResyncResponse(result)
        }
    }

    public func recoveryCodes(user: String, _ request: RecoveryCodesRequest, caller: Caller) async throws(ServiceError) -> RecoveryCodesResponse {
        let user = try RequestRules.user(user)
        return try await run { (store, tables) throws(StoreError) in
            let now = self.now()
            let codes = try store.generateRecoveryCodes(user: user, count: request.count ?? 10, now: now)
            try tables.append(AuditEntry(caller, "recovery-codes", user: user, serial: "", result: "ok", detail: "\(codes.count) codes", time: now))
            return RecoveryCodesResponse(user: user, codes: codes)
        }
    }

    public func bindingID(user: String, caller: Caller) async throws(ServiceError) -> BindingIDResponse {
        let user = try RequestRules.user(user)
        return try await run { (store, _) throws(StoreError) in BindingIDResponse(user: user, bindingId: store.bindingID(user: user)) }
    }

    public func status(caller: Caller) async throws(ServiceError) -> StatusResponse {
        let location = settings.paths.database
        return try await run { (store, _) throws(StoreError) in
            let tokens = try store.tokens()
            return StatusResponse(store: "sqlite", location: location, schemaVersion: store.schemaVersion, users: Set(tokens.map(\.user)).count,
                                  tokens: tokens.count, totpTokens: tokens.filter { $0.kind == .totp }.count,
                                  hotpTokens: tokens.filter { $0.kind == .hotp }.count, lockedUsers: try store.lockedUsers(now: self.now()))
        }
    }

    /// A change to one token, audited.
    private func change(user: String, serial: String, action: String, caller: Caller,
                        _ body: @escaping (Store) throws(StoreError) -> Void) async throws(ServiceError) {
        let user = try RequestRules.user(user)
        try await run { (store, tables) throws(StoreError) in
            try body(store)
            try tables.append(AuditEntry(caller, action, user: user, serial: serial, result: "ok", detail: "", time: self.now()))
        }
    }

    // MARK: access

    public func addCredential(kind: CredentialKind, _ request: CredentialRequest, caller: Caller) async throws(ServiceError) -> CredentialCreated {
        let (row, credential) = try AccessRules.newCredential(kind: kind, request, now: self.now())
        return try await runService { (_, tables) throws(ServiceError) -> CredentialCreated in
            guard try Self.storeCall({ () throws(StoreError) in try tables.insert(row) }) else { throw AccessRules.duplicate(kind, row.name) }
            try Self.storeCall { () throws(StoreError) in
                try tables.append(AuditEntry(caller, "\(kind.rawValue) add", user: "", serial: "", result: "ok", detail: row.name, time: row.created))
            }
            return CredentialCreated(name: row.name, kind: kind.rawValue, credential: credential.text)
        }
    }

    public func credentials(kind: CredentialKind, caller: Caller) async throws(ServiceError) -> CredentialList {
        try await run { (_, tables) throws(StoreError) in CredentialList(credentials: try tables.credentials(kind: kind).map(\.info)) }
    }

    public func revokeCredential(kind: CredentialKind, name: String, caller: Caller) async throws(ServiceError) {
        try await runService { (_, tables) throws(ServiceError) in
            try Self.storeCall { () throws(StoreError) in
                let now = self.now()
                guard try tables.revoke(kind: kind, name: name, now: now) else {
                    throw StoreError(.notFound, "no \(kind.rawValue) named \(name) has a credential in force; see: securotp \(kind.rawValue) list")
                }
                try tables.append(AuditEntry(caller, "\(kind.rawValue) revoke", user: "", serial: "", result: "ok", detail: name, time: now))
            }
        }
    }

    public func authenticate(credential text: String, address: String) async throws(ServiceError) -> Caller {
        guard let credential = Credential(text: text) else { throw AccessRules.refused }
        let row = try Self.storeCall { () throws(StoreError) in try credentials.credential(id: credential.id) }
        guard let row, let caller = AccessRules.caller(for: row, presented: credential, address: address) else { throw AccessRules.refused }
        let now = self.now()
        if lastTouch.due(row.id, now: now) { try await run { (_, tables) throws(StoreError) in try tables.touch(id: row.id, now: now) } }
        return caller
    }

    public func audit(user: String?, limit: Int, caller: Caller) async throws(ServiceError) -> AuditList {
        let limit = min(max(limit, 1), 10_000)
        return try await run { (_, tables) throws(StoreError) in AuditList(entries: try tables.audit(user: user, limit: limit)) }
    }

    public func record(_ entry: AuditEntry) async {
        _ = try? await run { (_, tables) throws(StoreError) in try tables.append(entry) }
    }

    public func pruneAudit(before time: Int64) async throws(ServiceError) -> Int {
        try await run { (_, tables) throws(StoreError) in try tables.pruneAudit(before: time) }
    }

    // MARK: helpers

    static func storeCall<R>(_ body: () throws(StoreError) -> R) throws(ServiceError) -> R {
        do throws(StoreError) { return try body() } catch { throw ServiceError(error) }
    }

}
