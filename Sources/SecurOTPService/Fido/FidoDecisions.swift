import SecurOTPCore
import SecurOTPStore

/// What the validator decides for a host's security-key login (docs/fido.md, "Remote mode"),
/// written once for every store: the store reads the rows, runs the write a verdict names
/// (the conditional counter write, the cloned mark) and counts as the verdict says. The check
/// itself is the module's local one (FidoAssertionCheck).
public enum FidoDecisions {
    /// How many credentials one challenge offers at most (the module's `max_devices` default).
    public static let maxOffered = 24
    public static let maxAuthenticatorData = 1024
    public static let maxSignature = 512

    /// The challenge the host puts into its client data (FidoClientData): derived from the
    /// challenge's random id, so the stored challenge row alone names it (as an OCRA
    /// challenge's text).
    public static func challenge(challengeID: String) -> [UInt8] {
        PushRules.sha256(Array("securotp fido challenge \(challengeID)".utf8))
    }

    /// The user a challenge request names, with its origin and app ID checked.
    public static func challengeUser(_ request: FidoChallengeRequest) throws(ServiceError) -> String {
        let user = try RequestRules.user(request.user)
        guard !request.origin.isEmpty, request.origin.utf8.count <= 255, (request.appid?.utf8.count ?? 0) <= 255 else {
            throw ServiceError(.invalidInput, "origin must be 1 to 255 characters, appid at most 255")
        }
        return user
    }

    /// The credentials an admin's request adds (`securotp import`, `fido enroll` with `--server`), each parsed.
    public static func credentials(_ request: FidoAddRequest) throws(ServiceError) -> [FidoCredential] {
        guard ["enroll", "pamu2fcfg", "mapping-file"].contains(request.source) else {
            throw ServiceError(.invalidInput, "source must be enroll, pamu2fcfg or mapping-file")
        }
        guard !request.credentials.isEmpty, request.credentials.count <= maxOffered else {
            throw ServiceError(.invalidInput, "1 to \(maxOffered) credentials at a time")
        }
        var credentials: [FidoCredential] = []
        for (index, item) in request.credentials.enumerated() {
            guard !item.origin.isEmpty, item.origin.utf8.count <= 255 else { throw ServiceError(.invalidInput, "credential \(index + 1): origin must be 1 to 255 characters") }
            let (credential, problem) = FidoCredential.parse(field: Substring(item.credential), origin: item.origin)
            guard let credential else { throw ServiceError(.invalidInput, "credential \(index + 1): \(problem)") }
            credentials.append(credential)
        }
        return credentials
    }

    /// The audit entry of each added credential.
    public static func addedAudit(_ caller: Caller, user: String, _ credential: FidoCredential, source: String, now: Int64) -> AuditEntry {
        AuditEntry(caller, "fido add", user: user, serial: credential.serial, result: "ok", detail: source, time: now)
    }

    /// The audit entry of an assertion's outcome.
    public static func verifiedAudit(_ caller: Caller, _ assertion: Assertion, _ response: VerifyResponse, _ verdict: Verdict, now: Int64) -> AuditEntry {
        AuditEntry(caller, "fido verify", user: assertion.user, serial: assertion.serial, result: response.result.rawValue, detail: verdict.detail, time: now)
    }

    /// A fresh challenge for `user` at `host` offering `credentials` (those made for the host's
    /// origin or app ID, not cloned, not resident); none and no challenge row for a locked user.
    public static func offer(user: String, host: String, credentials: [FidoCredential], origin: String, appID: String?,
                             locked: Bool, now: Int64) throws(StoreError) -> (PendingChallenge?, FidoChallengeResponse) {
        guard let id = PendingChallenge.freshID() else { throw StoreError(.system, "no randomness available") }
        // Resident credentials have no key handle to name; local mode finds them by checking each
        // answer against the enrolled public key, which this wire form does not carry (docs/fido.md,
        // "Remote mode"). Offering one would make the module refuse the whole challenge.
        let usable = locked ? [] : credentials.filter {
            !$0.cloned && !$0.resident && ($0.origin == origin || $0.origin == (appID ?? origin))
        }.prefix(maxOffered)
        let response = FidoChallengeResponse(id: id, challenge: PushRules.base64URLEncode(challenge(challengeID: id)),
                                             expiresIn: Int(PendingChallenge.lifetime),
                                             credentials: usable.map { credential in
                                                 FidoAllowedCredential(serial: credential.serial, keyHandle: PushRules.base64URLEncode(credential.keyHandle),
                                                                       type: credential.type.rawValue, origin: credential.origin,
                                                                       presence: credential.presence, verification: credential.verification,
                                                                       pin: credential.pin)
                                             })
        guard !usable.isEmpty else { return (nil, response) }
        // The row names what it offered: an answer from any other credential is refused.
        let pending = PendingChallenge(id: id, user: user, host: host, kind: .fido, serial: usable.map(\.serial).joined(separator: ","), position: 0, pinMode: .none, remaining: 0,
                                       expires: now + PendingChallenge.lifetime)
        return (pending, response)
    }

    /// A host's assertion with its fields checked.
    public struct Assertion: Sendable {
        public var user: String
        public var id: String
        public var serial: String
        /// nil: the key was there and the user did not touch it.
        public var signed: (clientData: [UInt8], authenticatorData: [UInt8], signature: [UInt8])?

        public init(_ request: FidoVerifyRequest) throws(ServiceError) {
            user = try RequestRules.user(request.user)
            guard request.id.utf8.count <= 64, request.serial.utf8.count <= 64 else { throw ServiceError(.invalidInput, "id and serial are at most 64 characters") }
            id = request.id
            serial = request.serial
            if request.declined == true {
                signed = nil
            } else {
                signed = (try PushRules.binary(request.clientData, "client_data", maxBytes: FidoClientData.maxLength),
                          try PushRules.binary(request.authenticatorData, "authenticator_data", maxBytes: maxAuthenticatorData),
                          try PushRules.binary(request.signature, "signature", maxBytes: maxSignature))
            }
        }
    }

    /// What the store does for one assertion.
    public struct Verdict: Sendable, Equatable {
        public enum Write: Sendable, Equatable {
            case none
            /// The conditional counter write; if it changes no row the login lost a race: `lostRace()`.
            case counter(serial: String, from: UInt32, to: UInt32)
            /// A valid signature whose counter did not rise: the key was cloned.
            case markCloned(serial: String)
        }

        public var write: Write = .none
        /// Counted towards the user's lockout (everything refused but a locked user).
        public var countsFailure: Bool
        public var response: VerifyResponse
        /// For the audit entry and the validator's log line.
        public var detail: String
    }

    /// The decision for `assertion`: `challenge` is the row taken for its id (nil: unknown,
    /// expired, used, or another host's or user's), `credential` the user's credential of that
    /// serial (nil: none).
    public static func decide(_ assertion: Assertion, challenge: PendingChallenge?, credential: FidoCredential?, locked: Bool) -> Verdict {
        if locked {
            return Verdict(countsFailure: false, response: VerifyResponse(result: .locked, serial: assertion.serial, reason: "user locked"),
                           detail: "user locked")
        }
        guard let challenge, challenge.kind == .fido else {
            return refusal(assertion, "unknown, expired or used FIDO challenge")
        }
        guard challenge.serial.split(separator: ",").contains(Substring(assertion.serial)) else {
            return refusal(assertion, "the credential was not offered by this challenge (another origin, or disabled)")
        }
        guard let credential, !credential.cloned else {
            return refusal(assertion, credential == nil ? "no such FIDO credential for this user" : "the credential is disabled (cloned key)")
        }
        guard let signed = assertion.signed else { return refusal(assertion, "the key was not touched") }
        // What the key signed must be a securotp login with this challenge for the RP ID the
        // credential was enrolled for: the bytes a host builds (FidoClientData), nothing else.
        guard signed.clientData == FidoClientData.json(challenge: Self.challenge(challengeID: challenge.id), rpID: credential.origin) else {
            return refusal(assertion, "the client data is not a securotp login with this challenge for the credential's origin")
        }
        let check = FidoAssertionCheck.verify(authenticatorData: signed.authenticatorData, signature: signed.signature,
                                              clientDataHash: FidoClientData.hash(signed.clientData), credential: credential,
                                              requirePresence: credential.presence, requireVerification: credential.verification || credential.pin)
        switch check {
        case .refused(let refusal):
            var verdict = Self.refusal(assertion, refusal.reason)
            if case .counterNotIncreased = refusal {
                verdict.write = .markCloned(serial: credential.serial)
                verdict.detail = "\(refusal.reason); credential disabled"
            }
            return verdict
        case .verified(let counter):
            return Verdict(write: .counter(serial: credential.serial, from: credential.counter, to: counter), countsFailure: false,
                           response: VerifyResponse(result: .accept, serial: credential.serial, reason: "security key"),
                           detail: "counter \(counter)")
        }
    }

    /// The verdict when the counter write changed no row: another login used the credential first.
    public static func lostRace(_ assertion: Assertion) -> Verdict {
        refusal(assertion, "another login used the credential at the same time")
    }

    private static func refusal(_ assertion: Assertion, _ reason: String) -> Verdict {
        Verdict(countsFailure: true, response: VerifyResponse(result: .reject, serial: assertion.serial, reason: reason), detail: reason)
    }

    /// The response after the failure was counted.
    public static func counted(_ response: VerifyResponse, failures: Int, lockedNow: Bool) -> VerifyResponse {
        var response = response
        response.failures = failures
        response.lockedNow = lockedNow
        return response
    }
}
