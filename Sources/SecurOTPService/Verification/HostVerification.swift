import SecurOTPCore
import SecurOTPStore

/// The host-facing verification pipeline, written once for every backend: preflight, verify,
/// answer, offline codes and dialogues. A backend (`VerificationStorage`, or PostgreSQL's
/// async mirror of it) reads what a call needs inside one section serialised on the user; the
/// functions here decide on those reads alone; the backend then applies the `HostChanges` all
/// or nothing before it answers. docs/design.md, "Where a verification goes".
public enum HostVerification {
    // MARK: preflight

    /// What preflight tells a host about `active` (the user's active tokens), and whether an
    /// OCRA challenge must be issued (then `offerChallenge` on a snapshot read under the lock).
    public static func preflight(active: [TokenRecord], now: Int64) -> (response: PreflightResponse, issuesChallenge: Bool) {
        (PreflightResponse(hasTokens: !active.isEmpty, codeDigits: Preflight.codeDigits(active, now: now)),
         VerificationEngine.challengeSuite(among: active, now: now) != nil)
    }

    /// The OCRA challenge of a preflight: charged as an attempt and stored for the verification
    /// that answers it (Preflight.offer). Nil when the snapshot no longer calls for one.
    public static func offerChallenge(_ snapshot: VerifySnapshot, user: String, caller: Caller, engine: VerificationEngine,
                                      policy: VerifyPolicy, now: Int64)
        throws(StoreError) -> (offer: OCRAChallengeOffer, changes: HostChanges)? {
        guard let decision = try engine.issueChallenge(snapshot, user: user, policy: policy, now: now) else { return nil }
        let (offer, pending) = try Preflight.offer(decision.result, user: user, host: caller.name, now: now)
        return (offer, HostChanges(writes: decision.writes, challenge: pending))
    }

    // MARK: verify

    /// A passcode: the engine's decision, or one of the host's reserved offline codes; an
    /// accepted HOTP login of a host with offline codes refills them; a result that needs
    /// another step becomes a pending challenge.
    public static func verify(_ call: VerifyCall, _ reads: VerifyReads, engine: VerificationEngine, policy: VerifyPolicy,
                              now: Int64) throws(StoreError) -> HostOutcome {
        var reads = reads
        if call.passcodeRefusal != nil {
            // otp is not among the user's methods (MethodRules): decided against nothing, as
            // for a user without a token — the same engine work and answer, the failure counted
            // on the row read; no offline code is taken or handed out.
            reads.snapshot.tokens = []
            reads.snapshot.recoveryCodes = []
            reads.challenge = nil
            reads.reservations = []
        }
        let ocra = Preflight.ocraChallenge(reads.challenge, tokens: reads.snapshot.tokens.map(\.record))
        var changes = HostChanges()
        let result: VerifyResult
        var acceptedAt: Int64?
        let reserved = try call.input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
            try OfflinePlan.reserved(engine, reads.snapshot, reservations: reads.reservations, input: bytes, codeAtEnd: call.codeAtEnd,
                                     failureKey: reads.failureKey ?? call.user, now: now)
        }
        if let reserved {
            result = reserved.result
            changes.writes = reserved.writes
            let previous = reads.reservations.first { $0.serial == reserved.consumed.serial }
            changes.consumed = OfflineConsumption(reservation: reserved.consumed, expectedFirst: previous?.first ?? 0)
            acceptedAt = reserved.consumed.first - 1
        } else {
            let decision = try call.input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                try engine.verify(reads.snapshot, user: call.user, input: bytes, codeAtEnd: call.codeAtEnd, policy: policy, now: now,
                                  failureKey: reads.failureKey, challenge: ocra.challenge, charged: ocra.charged)
            }
            result = decision.result
            changes.writes = decision.writes
            if case .accepted(let serial, _) = result.outcome {
                acceptedAt = OfflinePlan.acceptedPosition(serial: serial, in: decision.writes)
            }
        }
        var offline: OfflineCodes?
        if call.keepsOfflineCodes, case .accepted(let serial, _) = result.outcome, let acceptedAt,
           let token = reads.snapshot.tokens.first(where: { $0.record.serial == serial }) {
            // The counter now: after an engine acceptance it follows the accepted code; a
            // reserved code leaves it where it was.
            let counterNow = max(Int64(bitPattern: token.record.parameters.counter), acceptedAt + 1)
            if let refill = try OfflinePlan.refill(engine, token: token, acceptedAt: acceptedAt, counterNow: counterNow,
                                                   previous: reads.reservations.first { $0.serial == serial },
                                                   count: call.caller.offlineCodes, pepper: call.caller.credentialHash, now: now) {
                changes.refill = refill.reservation
                if let write = refill.counterWrite { changes.writes.append(write) }
                offline = refill.codes
            }
        }
        var (response, pending) = try Dialogue.respond(to: result, user: call.user, host: call.caller.name,
                                                       stepsLeft: Dialogue.maxSteps, now: now)
        response.offline = offline.map { [$0] }
        changes.challenge = pending
        changes.audit = AuditEntry(call.caller, "verify", user: call.user, response: response, time: now)
        if let refusal = call.passcodeRefusal { changes.audit?.detail = refusal }
        return HostOutcome(response: response, changes: changes)
    }

    // MARK: answer

    /// What answering `pending` reads besides the challenge itself.
    public static func reads(answering pending: PendingChallenge, input: [UInt8]) -> AnswerRead {
        switch pending.kind {
        case .step(.newPIN):
            .token(serial: pending.serial)
        case .step(.nextCode):
            .snapshot(.tokens)
        case .step(.passcode):
            // As a login's first passcode: a recovery code's shape reads recovery codes.
            .snapshot(input.withUnsafeBufferPointer { VerificationEngine.readsRecoveryCodes(input: $0, codeAtEnd: false) }
                      ? .recoveryCodes : .tokens)
        case .ocraChallenge, .fido:
            // Answered through verify's challenge_id (or /v1/fido/verify), never as a dialogue step.
            .nothing
        }
    }

    /// A dialogue step answered: the challenge was taken (nil: unknown, expired, foreign or
    /// already answered), and the rows `reads(answering:)` named were read.
    public static func answer(_ call: AnswerCall, _ reads: AnswerReads, engine: VerificationEngine, policy: VerifyPolicy,
                              now: Int64) throws(StoreError) -> HostOutcome {
        var changes = HostChanges()
        let response: VerifyResponse
        decide: if let pending = reads.challenge {
            let decision: VerificationEngine.Decision<VerifyResult>
            switch pending.kind {
            case .step(.newPIN):
                let (answer, next, setPIN) = try Dialogue.afterNewPIN(pending, pin: call.input, now: now)
                if setPIN {
                    guard let record = reads.pinToken else { throw StoreError.noSuchToken(user: call.user, serial: pending.serial) }
                    changes.writes = [try call.input.withUnsafeBufferPointer { (pin) throws(StoreError) in
                        try VerificationEngine.setPIN(on: record, pin: pin)
                    }]
                }
                changes.challenge = next
                response = answer
                break decide
            case .step(.nextCode):
                decision = try call.input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                    try engine.verifyNextCode(reads.snapshot, user: call.user, serial: pending.serial, position: pending.position,
                                              input: bytes, policy: policy, now: now)
                }
            case .step(.passcode):
                decision = try call.input.withUnsafeBufferPointer { (bytes) throws(StoreError) in
                    try engine.verify(reads.snapshot, user: call.user, input: bytes, codeAtEnd: false, policy: policy, now: now)
                }
            case .ocraChallenge, .fido:
                response = Dialogue.unknownChallenge
                break decide
            }
            let (answer, next) = try Dialogue.respond(to: decision.result, user: call.user, host: call.caller.name,
                                                      stepsLeft: pending.remaining, now: now)
            changes.writes = decision.writes
            changes.challenge = next
            response = answer
        } else {
            response = Dialogue.unknownChallenge
        }
        changes.audit = AuditEntry(call.caller, "answer", user: call.user, response: response, time: now)
        return HostOutcome(response: response, changes: changes)
    }
}

/// A verify request, checked.
public struct VerifyCall: Sendable {
    public let user: String
    public let input: [UInt8]
    public let codeAtEnd: Bool
    /// An OCRA challenge this host's preflight was given.
    public let challengeID: String?
    /// What the host used of its offline codes while the validator was out of reach.
    public let offlineUsed: [OfflineUsage]
    public let caller: Caller
    /// A recovery code's shape: the snapshot holds the user's unused recovery codes instead of
    /// tokens (VerificationEngine.readsRecoveryCodes).
    public let readsRecoveryCodes: Bool
    /// Set by the store when otp is not among the user's login methods (MethodRules.refusal,
    /// the audit detail): the passcode is checked against nothing.
    public var passcodeRefusal: String?

    public init(_ request: VerifyRequest, caller: Caller) throws(ServiceError) {
        user = try RequestRules.user(request.user)
        let input = try RequestRules.passcode(request.passcode)
        self.input = input
        codeAtEnd = request.codeAtEnd ?? false
        challengeID = request.challengeId
        offlineUsed = request.offlineUsed ?? []
        self.caller = caller
        let codeAtEnd = codeAtEnd
        readsRecoveryCodes = input.withUnsafeBufferPointer { VerificationEngine.readsRecoveryCodes(input: $0, codeAtEnd: codeAtEnd) }
    }

    /// The caller is a host allowed to cache offline codes.
    private var hostHoldsOfflineCodes: Bool { caller.kind == .host && caller.offlineCodes > 0 }

    /// A host that keeps offline codes for its users: its reservations are read (after what
    /// it used offline is withdrawn), and an accepted HOTP login refills them.
    public var keepsOfflineCodes: Bool { hostHoldsOfflineCodes && !readsRecoveryCodes }

    /// Reads nothing but the user's tokens and failure row: no recovery code, no offline codes,
    /// no challenge to take (PostgreSQL verifies these in batches).
    public var readsTokensOnly: Bool { !readsRecoveryCodes && !hostHoldsOfflineCodes && challengeID == nil }

    /// Which rows besides the failure row the decision reads.
    public var rows: SnapshotRows { readsRecoveryCodes ? .recoveryCodes : .tokens }
}

/// An answer to a dialogue step, checked.
public struct AnswerCall: Sendable {
    public let user: String
    public let challengeID: String
    public let input: [UInt8]
    public let caller: Caller

    public init(_ request: AnswerRequest, caller: Caller) throws(ServiceError) {
        user = try RequestRules.user(request.user)
        challengeID = request.challengeId
        input = try RequestRules.passcode(request.answer)
        self.caller = caller
    }
}

/// The rows of a snapshot besides the failure row: a passcode reads the user's active tokens,
/// a recovery code's shape the user's unused recovery codes.
public enum SnapshotRows: Sendable {
    case tokens, recoveryCodes
}

/// What a verify call decides on.
public struct VerifyReads: Sendable {
    /// Where failures count: nil for the user's own row; `Store.unresolvedUsersKey` when the
    /// store knows nothing of the user (no active token, no unused recovery code).
    public var failureKey: String?
    /// The failure row named by `failureKey`, and the rows `VerifyCall.rows` names.
    public var snapshot: VerifySnapshot
    /// The OCRA challenge `challenge_id` names, taken (deleted) so that it is answered once.
    public var challenge: PendingChallenge?
    /// The host's offline reservations for the user, when `keepsOfflineCodes`.
    public var reservations: [OfflineReservation]

    public init(failureKey: String?, snapshot: VerifySnapshot, challenge: PendingChallenge? = nil,
                reservations: [OfflineReservation] = []) {
        self.failureKey = failureKey
        self.snapshot = snapshot
        self.challenge = challenge
        self.reservations = reservations
    }
}

/// What answering a dialogue step reads after taking its challenge.
public enum AnswerRead: Sendable {
    /// The user's own failure row and these rows.
    case snapshot(SnapshotRows)
    /// The token whose new PIN is set (in any state, as `securotp pin set` finds it).
    case token(serial: String)
    case nothing
}

/// What an answer call decides on.
public struct AnswerReads: Sendable {
    public var challenge: PendingChallenge?
    public var snapshot: VerifySnapshot
    public var pinToken: TokenRecord?

    public init(challenge: PendingChallenge?, snapshot: VerifySnapshot = VerifySnapshot(failures: .clear), pinToken: TokenRecord? = nil) {
        self.challenge = challenge
        self.snapshot = snapshot
        self.pinToken = pinToken
    }
}

/// A reserved offline code accepted online: the reservation moves past it, from exactly the
/// position read (a conditional write, so the code is accepted once).
public struct OfflineConsumption: Sendable, Equatable {
    public var reservation: OfflineReservation
    public var expectedFirst: Int64
}

/// Everything one host call writes, applied by the backend all or nothing: the engine's
/// conditional writes, the next dialogue step, the offline reservation changes, the audit entry.
public struct HostChanges: Sendable {
    public var writes: [StateWrite] = []
    public var challenge: PendingChallenge?
    public var consumed: OfflineConsumption?
    /// The host's reservation after a refill (replaces the one it had for that token).
    public var refill: OfflineReservation?
    public var audit: AuditEntry?

    public init(writes: [StateWrite] = [], challenge: PendingChallenge? = nil) {
        self.writes = writes
        self.challenge = challenge
    }
}

public struct HostOutcome: Sendable {
    public var response: VerifyResponse
    public var changes: HostChanges
}

extension AuditEntry {
    /// The audit entry of `caller`'s call.
    public init(_ caller: Caller, _ action: String, user: String, serial: String = "", result: String = "ok", detail: String = "",
                time: Int64) {
        self.init(time: time, actorKind: caller.kind.rawValue, actor: caller.name, address: caller.address, action: action, user: user,
                  serial: serial, result: result, detail: detail)
    }

    /// The audit entry of a host call that answered `response`.
    init(_ caller: Caller, _ action: String, user: String, response: VerifyResponse, time: Int64) {
        self.init(caller, action, user: user, serial: response.serial ?? "", result: response.result.rawValue,
                  detail: response.reason ?? "", time: time)
    }
}
