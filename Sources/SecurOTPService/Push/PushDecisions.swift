import SecurOTPCore

/// What push operations decide, written once for both stores (SQLite: SQLiteTokenService+Push,
/// PostgreSQL: PostgresTokenService+Push; docs/push.md). Each store reads the rows, runs the
/// conditional statements a decision names and reports back what they changed; the states a
/// request moves to, what is counted, the limits, the audit entries and the answers are here.
public enum PushDecisions {
    // MARK: messages both stores give

    public static let unknownDevice = "no such device for this user; see: securotp device list"
    public static let deviceGone = "this device is no longer registered; activate it again"

    public static func deviceNotActive(_ state: String) -> String {
        "this device is \(state); unlock it with the code from: securotp device unlock-code"
    }

    public static func unknownAnswered(_ id: String) -> String { "no pending push request \(TerminalText.quoted(id)) for this user" }
    public static func unknownHostRequest(_ id: String) -> String { "no push request \(TerminalText.quoted(id)) from this host" }

    // MARK: a device's answer

    /// A device's answer with its fields checked (bounds, base64url, the number's form).
    public struct Answer: Sendable {
        public var id: String
        /// approve, deny or fraud.
        public var decision: String
        public var kind: Kind

        public enum Kind: Sendable { case deny, fraud, approve(Signed) }

        public struct Signed: Sendable {
            public var authenticatorData: [UInt8]
            public var clientDataJSON: [UInt8]
            public var signature: [UInt8]
            public var number: String
        }

        public init(_ request: DeviceAnswerRequest) throws(ServiceError) {
            guard ["approve", "deny", "fraud"].contains(request.decision) else {
                throw ServiceError(.invalidInput, "decision must be approve, deny or fraud")
            }
            id = request.id
            decision = request.decision
            switch request.decision {
            case "deny": kind = .deny
            case "fraud": kind = .fraud
            default:
                kind = .approve(Signed(authenticatorData: try PushRules.binary(request.authenticatorData, "authenticator_data", maxBytes: 37),
                                       clientDataJSON: try PushRules.binary(request.clientDataJson, "client_data_json", maxBytes: 1024),
                                       signature: try PushRules.binary(request.signature, "signature", maxBytes: 80),
                                       number: try PushRules.number(request.number ?? "")))
            }
        }

        /// The audit action of this answer.
        public var action: String { "push \(decision)" }
    }

    /// An audit entry's result and detail; the store adds caller, user, request and time.
    public struct Audit: Sendable, Equatable {
        public var result: String
        public var detail: String
    }

    /// A change of a pending request and what follows from it. Stores run it in this order:
    /// count a failure if `countFailure == .always`; move the request from pending to `moveTo`
    /// (conditional); if that move lost to another call and `ifLost` is set, write its audit and
    /// answer its response; otherwise count a failure if `.ifMoved`, block the user's pushes if
    /// `blockUser`, write `audit` and answer `response`.
    public struct Change: Sendable, Equatable {
        public enum Counting: Sendable, Equatable { case never, always, ifMoved }

        public var countFailure: Counting = .never
        public var moveTo: String?
        public var ifLost: Lost?
        public var blockUser = false
        public var audit: Audit?
        public var response: DeviceStateResponse

        public struct Lost: Sendable, Equatable {
            public var audit: Audit?
            public var response: DeviceStateResponse
        }
    }

    /// The next step of answering a request, decided from the rows read.
    public enum AnswerStep: Sendable {
        /// Nothing to write.
        case respond(DeviceStateResponse)
        case change(Change)
        /// Count a wrong number on the request (conditional on pending), then run `afterWrongNumber`.
        case countWrongNumber
        /// The signature verified: the store moves the device's counter forward only if `counter`
        /// advances it (`counterAdvances`; else run `counterNotAdvanced`), stores the approval
        /// conditional on pending (lost: answer the request's current state) and runs `approved`.
        case approve(counter: UInt32)
    }

    /// What a device's answer does to the request `row`, answered by `device` (active, the
    /// request's user's: the store checks both first).
    /// `policy`: a phone's passkey (`FFFF#0002`) is checked at its public_url origin (PushPolicy.webOrigin).
    public static func answer(_ answer: Answer, row: PushRequestRow, device: PushDeviceRow, requireUserVerification: Bool, now: Int64,
                              policy: PushPolicy = PushPolicy()) -> AnswerStep {
        guard row.state == "pending" else { return .respond(DeviceStateResponse(state: row.state, reason: "the request is no longer pending")) }
        guard row.expires > now else { return .change(Change(moveTo: "expired", response: DeviceStateResponse(state: "expired", reason: "the request expired"))) }
        switch answer.kind {
        case .deny, .fraud:
            let fraud = answer.decision == "fraud"
            return .change(Change(countFailure: .ifMoved, moveTo: "denied", ifLost: Change.Lost(response: DeviceStateResponse(state: "denied")),
                                  blockUser: fraud,
                                  audit: fraud ? Audit(result: "fraud", detail: "user reported the login as not theirs; pushes blocked until: securotp device unblock-push \(row.user)")
                                               : Audit(result: "denied", detail: "device \(device.id)"),
                                  response: DeviceStateResponse(state: "denied")))
        case .approve(let signed):
            guard ConstantTime.equal(Array(signed.number.utf8), Array(row.number.utf8)) else { return .countWrongNumber }
            let check = PushRules.checkApproval(statement: row.statement(device: device.id), publicKey: device.publicKey,
                                                authenticatorData: signed.authenticatorData, clientDataJSON: signed.clientDataJSON,
                                                signature: signed.signature, requireUserVerification: requireUserVerification,
                                                deviceType: DeviceType(aaid: device.aaid), webOrigin: policy.webOrigin(aaid: device.aaid))
            switch check {
            case .refused(let reason): return .change(refused(reason, reason: reason))
            case .verified(let counter, _): return .approve(counter: counter)
            }
        }
    }

    /// A wrong number was counted (`count` on the request now): one failure for the user, and
    /// the request fails at `PushPolicy.wrongNumbersToFail`.
    public static func afterWrongNumber(count: Int) -> Change {
        let stillPending = Change.Lost(audit: Audit(result: "reject", detail: "wrong number (\(count) of \(PushPolicy.wrongNumbersToFail))"),
                                       response: DeviceStateResponse(state: "pending", reason: "wrong number"))
        guard count >= PushPolicy.wrongNumbersToFail else {
            return Change(countFailure: .always, audit: stillPending.audit, response: stillPending.response)
        }
        return Change(countFailure: .always, moveTo: "failed", ifLost: stillPending, audit: Audit(result: "failed", detail: "wrong number \(count) times"),
                      response: DeviceStateResponse(state: "failed", reason: "wrong number"))
    }

    /// Whether a verified signature's counter moves the device's stored one forward (0: the device keeps none).
    public static func counterAdvances(_ counter: UInt32, stored: Int64) -> Bool {
        SignatureCounter.accepts(received: counter, stored: SignatureCounter.stored(stored))
    }

    public static let counterNotAdvanced = refused(SignatureCounter.notAdvancedDetail, reason: "signature counter did not advance")

    /// The approval is stored.
    public static func approved(by device: PushDeviceRow) -> (audit: Audit, response: DeviceStateResponse) {
        (Audit(result: "ok", detail: "device \(device.id)"), DeviceStateResponse(state: "approved"))
    }

    /// A refused approval: one failure, the request fails whether or not this call moved it.
    static func refused(_ detail: String, reason: String) -> Change {
        Change(countFailure: .always, moveTo: "failed", audit: Audit(result: "reject", detail: detail), response: DeviceStateResponse(state: "failed", reason: reason))
    }

    // MARK: a host's request

    /// Why a new request for `user` is refused (audit detail, message for a `conflict`), or nil.
    /// Checked in this order after the user's active device: fraud block, `push_limit` (the
    /// admission `PushRate.admit` made of the user's count), lockout.
    public static func openRefusal(user: String, blocked: Bool, admission: PushRate.Admission, locked: Bool, policy: PushPolicy) -> (reason: String, message: String)? {
        if blocked {
            return ("pushes blocked (deny --fraud)",
                    "push approval is blocked for \(user) after a fraud report; an admin clears it: securotp device unblock-push \(user)")
        }
        if case .refused(let retryAfter) = admission {
            return ("push_limit \(policy.limit) reached",
                    "too many push requests for \(user) without a successful login (push_limit \(policy.limit), one more every "
                        + "\(policy.limitInterval) s); the next is possible in \(retryAfter) s; use a passcode")
        }
        if locked { return ("user locked", "\(user) is locked after repeated failures") }
        return nil
    }

    public static func noActiveDevice(user: String) -> (reason: String, message: String) {
        ("no active device", "\(user) has no active device for push approval")
    }

    public static func openedDetail(service: String, cancelledEarlier: Bool) -> String {
        "service \(service)" + (cancelledEarlier ? "; cancelled the host's earlier request" : "")
    }

    /// What a host's status read does to its request.
    public enum StatusStep: Sendable, Equatable {
        case report(PushStatus)
        /// Move pending → expired (whoever does it), report expired.
        case expire(PushStatus)
        /// Move approved → consumed; only the call that moves it hands the approval out
        /// (`handOut`), any other reports `lost`.
        case handOut(lost: PushStatus)
    }

    public static func status(_ row: PushRequestRow, now: Int64) -> StatusStep {
        switch row.state {
        case "pending" where row.expires <= now: return .expire(PushStatus(id: row.id, state: "expired", expires: row.expires))
        case "approved": return .handOut(lost: PushStatus(id: row.id, state: "consumed", expires: row.expires))
        default: return .report(reported(row, state: row.state))
        }
    }

    /// Why a request failed, as a host tells its user (docs/push.md, "What the user sees"):
    /// the wrong numbers that fail a request, or a refused approval — a signature that does not
    /// verify (another number's, a replayed one), a counter that did not advance, a device gone.
    public static let failedByWrongNumbers = "wrong_number"
    public static let failedByRefusal = "approval_refused"

    /// What a host is told of `row` in `state`: a pending request's wrong numbers so far, a
    /// failed one's reason.
    static func reported(_ row: PushRequestRow, state: String) -> PushStatus {
        var status = PushStatus(id: row.id, state: state, expires: row.expires)
        switch state {
        case "pending" where row.wrongNumbers > 0: status.wrongNumbers = row.wrongNumbers
        case "failed": status.reason = row.wrongNumbers >= PushPolicy.wrongNumbersToFail ? failedByWrongNumbers : failedByRefusal
        default: break
        }
        return status
    }

    /// The approval this call moved to consumed, given the approving device as read now: handed
    /// out if it is still the user's and active, else failed with an audit entry.
    public static func handOut(_ row: PushRequestRow, device: PushDeviceRow?, policy: PushPolicy = PushPolicy()) -> (status: PushStatus, audit: Audit?) {
        guard let device, device.user == row.user, device.state == "active" else {
            return (PushStatus(id: row.id, state: "failed", expires: row.expires, reason: failedByRefusal),
                    Audit(result: "reject", detail: "the approving device is gone or blocked"))
        }
        return (PushStatus(id: row.id, state: "consumed", expires: row.expires, approval: row.approval(by: device, origin: policy.webOrigin(aaid: device.aaid))), nil)
    }

    public static func noResultAwaited(_ row: PushRequestRow) -> String {
        "push request \(row.id) has no approval awaiting a result (state \(row.state))"
    }

    /// The host's verdict on a handed-out approval: accepted resets the user's push count and
    /// failures; refused counts one failure.
    public static func result(_ row: PushRequestRow, accepted: Bool, reason: String?) -> Audit {
        if accepted { return Audit(result: "accept", detail: "device \(row.device)") }
        let reason = TerminalText.bounded(TerminalText.escaped(reason ?? ""), maxBytes: 200)
        return Audit(result: "reject", detail: "the host refused the approval: \(reason)")
    }

    public static func cancelled(_ row: PushRequestRow, moved: Bool) -> PushStatus {
        PushStatus(id: row.id, state: moved ? "cancelled" : row.state, expires: row.expires)
    }
}
