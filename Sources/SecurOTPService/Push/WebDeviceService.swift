import SecurOTPCore

/// Phones without an app (docs/push.md "Phones without an app", issue 16): a passkey in the
/// phone's browser enrolls with the single-use activation code of `securotp device add --web`.
/// A protocol beside DeviceService so that a backend without it is told apart by a cast (the
/// routes answer `not_supported`).
public protocol WebDeviceService: DeviceService {
    /// No credential: the activation code is one. Does not take the code; a new challenge
    /// replaces the previous one.
    func webEnrollOptions(_ request: WebEnrollOptionsRequest, address: String) async throws(ServiceError) -> WebEnrollOptions
    /// Checks the registration against the stored challenge (taken, single use) and takes the
    /// code: the device becomes active with aaid `FFFF#0002`.
    func webEnroll(_ request: WebEnrollRequest, address: String) async throws(ServiceError) -> WebEnrolled
    /// A random session challenge, stored hashed, single use, 2 minutes.
    func webSessionOptions(address: String) async throws(ServiceError) -> WebSessionOptions
    /// An assertion over a session challenge (taken first, single use) by an active web
    /// device's passkey → a bearer session `sotp_w_…` (10 minutes, stored hashed).
    func webSession(_ request: WebSessionRequest, address: String) async throws(ServiceError) -> WebSession
    /// The caller a session belongs to, as `authenticateDevice` answers for a device
    /// credential; `unauthorized` for anything else.
    func authenticateWebSession(_ token: String, address: String) async throws(ServiceError) -> Caller
}

public struct WebSessionOptions: Codable, Sendable, Equatable {
    public var challenge: String
    public var rpId: String
    public var expires: Int64
    public init(challenge: String, rpId: String, expires: Int64) { self.challenge = challenge; self.rpId = rpId; self.expires = expires }
}

public struct WebSessionRequest: Codable, Sendable, Equatable {
    public var credentialId: String
    public var authenticatorData: String
    public var clientDataJson: String
    public var signature: String
    public init(credentialId: String, authenticatorData: String, clientDataJson: String, signature: String) {
        self.credentialId = credentialId; self.authenticatorData = authenticatorData; self.clientDataJson = clientDataJson
        self.signature = signature
    }
}

public struct WebSession: Codable, Sendable, Equatable {
    public var device: String
    public var user: String
    public var session: String
    public var expires: Int64
    public init(device: String, user: String, session: String, expires: Int64) {
        self.device = device; self.user = user; self.session = session; self.expires = expires
    }
}

public struct WebEnrollOptionsRequest: Codable, Sendable, Equatable {
    public var activationCode: String
    public init(activationCode: String) { self.activationCode = activationCode }
}

public struct WebEnrollOptions: Codable, Sendable, Equatable {
    public var device: String
    public var user: String
    /// The validator's name to show: public_url's host name.
    public var validator: String
    public var rpId: String
    /// base64url; the device id's bytes (no personal data, one per device).
    public var userId: String
    /// base64url of 32 random bytes, single use.
    public var challenge: String
    public var expires: Int64

    public init(device: String, user: String, validator: String, rpId: String, userId: String, challenge: String, expires: Int64) {
        self.device = device; self.user = user; self.validator = validator; self.rpId = rpId; self.userId = userId
        self.challenge = challenge; self.expires = expires
    }
}

public struct WebEnrollRequest: Codable, Sendable, Equatable {
    public var activationCode: String
    public var credentialId: String
    public var clientDataJson: String
    public var attestationObject: String
    public init(activationCode: String, credentialId: String, clientDataJson: String, attestationObject: String) {
        self.activationCode = activationCode; self.credentialId = credentialId; self.clientDataJson = clientDataJson
        self.attestationObject = attestationObject
    }
}

public struct WebEnrolled: Codable, Sendable, Equatable {
    public var device: String
    public var user: String
    public var state: String
    public init(device: String, user: String, state: String) { self.device = device; self.user = user; self.state = state }
}

/// What both stores share of web sessions.
public enum WebSessionRules {
    public static let prefix = "sotp_w_"
    public static let challengeLifetime: Int64 = 120
    public static let sessionLifetime: Int64 = 600
    public static let refused = ServiceError(.unauthorized, "the passkey sign-in was refused; reload the page and try again")

    /// Rows are keyed by SHA-256 of what the page holds: a read database shows no usable value.
    public static func hash(_ value: [UInt8]) -> [UInt8] { PushStatement.sha256(value) }

    public struct Parts: Sendable {
        public var credentialID: [UInt8]
        public var authenticatorData: [UInt8]
        public var clientDataJSON: [UInt8]
        public var signature: [UInt8]
        /// The challenge the client data names (checked again by the verifier).
        public var challenge: [UInt8]
    }

    public static func parts(_ request: WebSessionRequest) throws(ServiceError) -> Parts {
        let clientData = try PushRules.binary(request.clientDataJson, "client_data_json", maxBytes: ApprovalAssertion.maxClientDataLength)
        guard let parsed = JSONReader.parse(clientData), let text = parsed["challenge"]?.string, let challenge = Base64.decode(text, .url),
              challenge.count == 32 else { throw refused }
        return Parts(credentialID: try PushRules.binary(request.credentialId, "credential_id", maxBytes: WebAuthnRegistration.maxCredentialIDLength),
                     authenticatorData: try PushRules.binary(request.authenticatorData, "authenticator_data", maxBytes: 64),
                     clientDataJSON: clientData,
                     signature: try PushRules.binary(request.signature, "signature", maxBytes: ApprovalAssertion.maxSignatureLength),
                     challenge: challenge)
    }

    /// What a session's assertion decides, for both stores (they differ only in how they read
    /// and write): the device must be an active web device; the assertion a `webauthn.get` at
    /// the device's stored origin and its RP id, user verified, over the taken challenge; its
    /// counter must advance (PushDecisions.counterAdvances; PostgreSQL also re-checks it in
    /// the statement that stores it, across nodes).
    public enum Check: Sendable, Equatable {
        case accepted(counter: UInt32)
        /// `audit`: the detail to audit the refusal with.
        case refused(audit: String)
    }

    public static func usable(_ device: PushDeviceRow) -> Bool { device.state == "active" && DeviceType(aaid: device.aaid) == .phonePasskey }

    public static func check(_ parts: Parts, device: PushDeviceRow, origin: String) -> Check {
        guard let expected = DeviceType.phonePasskey.expected(signedAt: origin, requireUserVerification: true) else {
            return .refused(audit: ApprovalRefusal.wrongOrigin.code)
        }
        let checked = ApprovalAssertion.verify(authenticatorData: parts.authenticatorData, clientDataJSON: parts.clientDataJSON,
                                               signature: parts.signature, publicKey: device.publicKey, expectedChallenge: parts.challenge,
                                               expected: expected)
        switch checked {
        case .accepted(let counter, _):
            return PushDecisions.counterAdvances(counter, stored: device.signCounter) ? .accepted(counter: counter)
                                                                                      : .refused(audit: SignatureCounter.notAdvancedDetail)
        case .refused(let refusal):
            return .refused(audit: refusal.code)
        }
    }

    public static func newToken() throws(ServiceError) -> String {
        prefix + PushRules.base64URLEncode(try WebEnrollmentRules.newChallenge())
    }
}

/// What both stores share of web enrollment.
public enum WebEnrollmentRules {
    public static let aaid = DeviceType.phonePasskey.aaid
    /// An enrollment challenge lives at most this long (and never past the code's expiry).
    public static let challengeLifetime: Int64 = 300
    /// One message for a wrong, used or expired code and a refused registration's code.
    public static let unknownCode = ServiceError(.notFound, "unknown, used or expired activation link; ask your admin for a new one (securotp device add --web)")

    public static func publicURL(_ policy: PushPolicy) throws(ServiceError) -> PublicURL {
        guard let url = policy.publicURL else { throw PublicURL.unset }
        return url
    }

    public static func newChallenge() throws(ServiceError) -> [UInt8] {
        try PushRules.random(32).withUnsafeBytes { Array($0) }
    }

    /// The decoded parts of an enrollment, bounded before anything is parsed.
    public struct Parts: Sendable {
        public var normalizedCode: [UInt8]
        public var credentialID: [UInt8]
        public var clientDataJSON: [UInt8]
        public var attestationObject: [UInt8]
    }

    public static func parts(_ request: WebEnrollRequest) throws(ServiceError) -> Parts {
        guard let normalized = PushRules.normalizedCode(request.activationCode) else { throw unknownCode }
        return Parts(normalizedCode: normalized,
                     credentialID: try PushRules.binary(request.credentialId, "credential_id", maxBytes: WebAuthnRegistration.maxCredentialIDLength),
                     clientDataJSON: try PushRules.binary(request.clientDataJson, "client_data_json", maxBytes: ApprovalAssertion.maxClientDataLength),
                     attestationObject: try PushRules.binary(request.attestationObject, "attestation_object",
                                                             maxBytes: WebAuthnRegistration.maxAttestationObjectLength))
    }

    public static func options(device: String, user: String, url: PublicURL, challenge: [UInt8], expires: Int64) -> WebEnrollOptions {
        WebEnrollOptions(device: device, user: user, validator: url.rpID, rpId: url.rpID,
                         userId: PushRules.base64URLEncode(Array(device.utf8)), challenge: PushRules.base64URLEncode(challenge), expires: expires)
    }

    /// A refused enrollment: what the page gets and what the audit log says.
    public struct Refusal: Error, Sendable {
        public var error: ServiceError
        public var audit: String
    }

    /// What an enrollment decides once the store has taken the device's challenge (empty: none,
    /// or expired), for both stores: the registration at public_url's origin and RP id over
    /// that challenge, for the credential id sent.
    public static func check(_ parts: Parts, challenge: [UInt8], url: PublicURL) -> Result<WebAuthnRegistration.Credential, Refusal> {
        guard !challenge.isEmpty else { return .failure(Refusal(error: refused(.wrongChallenge), audit: "no enrollment challenge (or expired)")) }
        switch WebAuthnRegistration.verify(clientDataJSON: parts.clientDataJSON, attestationObject: parts.attestationObject,
                                           credentialID: parts.credentialID, expectedChallenge: challenge,
                                           expectedOrigin: url.origin, expectedRPID: url.rpID) {
        case .failure(let refusal): return .failure(Refusal(error: refused(refusal), audit: refusal.code))
        case .success(let credential): return .success(credential)
        }
    }

    /// A registration whose credential id is already registered, for any user (WebAuthn: the
    /// RP refuses it; schema 9 makes the id unique). The code stays valid for another passkey.
    public static let credentialRegistered = ServiceError(.conflict, "this passkey is already registered (credential_registered); use another passkey, or ask your admin to remove the device it belongs to first (securotp device remove)")

    /// The audit detail of that refusal, naming the device that holds the id.
    public static func credentialRegisteredDetail(holder: String) -> String { "credential id already registered to device \(holder)" }

    /// The refusal a registration check gives the page: what was wrong, never which code.
    public static func refused(_ refusal: WebAuthnRegistration.Refusal) -> ServiceError {
        ServiceError(.invalidInput, "the passkey registration was refused (\(refusal.code)); reload the enrollment link and try again")
    }
}
