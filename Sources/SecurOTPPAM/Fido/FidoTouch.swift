import CFido2
import CPAM
import CPosix
import SecurOTPCore
import SecurOTPEngine
import SecurOTPStore

/// The part of a security-key login that happens at the key, the same in both modes
/// (docs/fido.md): load libfido2, find an attached key that holds a credential, ask for the
/// PIN and the touch, take the assertion. Who issues the challenge and
/// checks the assertion differs: this module in local mode (FidoLogin), the validator in
/// remote mode (RemoteFido).
enum FidoTouch {
    enum Result {
        /// What the key signed: `authenticatorData ‖ clientDataHash`.
        case assertion(authenticatorData: [UInt8], signature: [UInt8])
        /// The user did not touch the key (or the key refused the touch).
        case declined
        /// The key was there and the login failed (wrong PIN, a key error, no conversation).
        case refused(Int32)
    }

    /// How long the key may wait for the touch (pam_u2f waits as long as libfido2 does).
    static let touchTimeoutMilliseconds: Int32 = 30_000
    static let pinPrompt = "Please enter the PIN: "

    /// libfido2 is loaded (once per process); false is logged.
    static func load(_ login: LoginContext) -> Bool {
        var errorText = [CChar](repeating: 0, count: Int(SECUROTP_FIDO_ERROR))
        guard securotp_fido_load(&errorText) == 1 else {
            login.session.log(.fidoUnavailable, LOG_ERR, "FIDO: \(text(errorText)); security keys cannot be used, other methods still work")
            return false
        }
        return true
    }

    /// What the key at hand did for one credential, and the client data it was given to sign
    /// (FidoClientData: its hash follows the authenticator data in the signed message).
    struct Touched {
        let credential: FidoCredential
        let result: Result
        let clientData: [UInt8]
    }

    /// The first of `credentials` an attached key holds, and that key's assertion; nil (logged)
    /// when no attached key holds one. The key is asked only for this host's own RP ID (its
    /// `origin`, or `appid` for a credential made for it: `FidoSettings.ownRPID`), over client
    /// data this host builds from `challenge` and that RP ID (`FidoClientData`): whoever offered
    /// the credentials and the challenge, the key signs a securotp login for this host, never
    /// a hash or an RP ID chosen elsewhere. A credential made for another RP ID is skipped here
    /// (callers drop them first: docs/security.md, "A security key signs only for this host").
    /// With one key attached and no PIN or verification to ask for first, the assertion itself
    /// is the test (the silent probe is skipped: docs/fido.md, "Finding the key"); otherwise a
    /// probe picks the key, as pam_u2f does, so that a PIN is only ever given to the key that
    /// holds the credential.
    static func assertion(_ login: LoginContext, _ credentials: [FidoCredential], challenge: [UInt8]) -> Touched? {
        var errorText = [CChar](repeating: 0, count: Int(SECUROTP_FIDO_ERROR))
        var cueShown = false
        for credential in credentials {
            guard let rpID = login.settings.fido.ownRPID(forCredentialMadeFor: credential.origin) else {
                login.session.debugLog("FIDO: credential \(credential.serial) of \(login.shownUser) is for another origin; not asked for")
                continue
            }
            let clientData = FidoClientData.json(challenge: challenge, rpID: rpID)
            let clientDataHash = FidoClientData.hash(clientData)
            var mustProbe: Int32 = credential.pin || credential.verification ? 1 : 0
            while true {
                var path = [CChar](repeating: 0, count: 256)
                var probed: Int32 = 1
                let found = withRequest(credential, rpID: rpID) { request in
                    securotp_fido_find(request, mustProbe, &path, &probed, &errorText)
                }
                guard found == Int32(SECUROTP_FIDO_OK) else {
                    login.session.debugLog("FIDO: credential \(credential.serial) of \(login.shownUser): \(text(errorText))")
                    break
                }
                if let result = touch(login, credential, rpID: rpID, clientDataHash: clientDataHash, path: path, probed: probed != 0,
                                      cueShown: &cueShown) {
                    return Touched(credential: credential, result: result, clientData: clientData)
                }
                // The unprobed assertion settled nothing (no credential there, or the key wants
                // something first): the probe decides, as pam_u2f's search would have.
                login.session.debugLog("FIDO: credential \(credential.serial) of \(login.shownUser): the key answered \(text(errorText)); probing it")
                mustProbe = 1
            }
        }
        login.session.log(.fidoNoKeyAttached, LOG_NOTICE, "FIDO: no attached security key holds a credential of \(login.shownUser)")
        return nil
    }

    /// The PIN (for `+pin`), the cue (once per login), and one assertion for `rpID` over
    /// `clientDataHash` with `up` per `presence` and `uv` per `verification`, on the key at
    /// `path`. Nil when the key was not probed and answered neither a signature nor a refused
    /// touch: the caller probes it.
    private static func touch(_ login: LoginContext, _ credential: FidoCredential, rpID: String, clientDataHash: [UInt8], path: [CChar],
                              probed: Bool, cueShown: inout Bool) -> Result? {
        let session = login.session
        var pin: UnsafeMutablePointer<CChar>?
        defer { if pin != nil { securotp_pam_free_response(pin) } }
        if credential.pin {
            let (code, response) = session.askSecret(pinPrompt)
            guard let response else {
                session.log(.conversationFailed, LOG_ERR, "FIDO: conversation failed for \(login.shownUser) asking for the PIN")
                return .refused(code)
            }
            pin = response
        }
        if login.settings.fido.cue && !cueShown {
            session.tell(login.settings.fido.cuePrompt)
            cueShown = true
        }
        var assertion = securotp_fido_assertion()
        var errorText = [CChar](repeating: 0, count: Int(SECUROTP_FIDO_ERROR))
        let up = Int32(credential.presence ? SECUROTP_FIDO_TRUE : SECUROTP_FIDO_FALSE)
        let uv = Int32(credential.verification ? SECUROTP_FIDO_TRUE : SECUROTP_FIDO_OMIT)
        let result = credential.resident
            ? residentAssertion(credential, rpID: rpID, path: path, clientDataHash: clientDataHash, up: up, uv: uv, pin: pin,
                                into: &assertion, error: &errorText)
            : withRequest(credential, rpID: rpID) { request in
                securotp_fido_assert(path, request, clientDataHash, up, uv, pin, touchTimeoutMilliseconds, &assertion, &errorText)
            }
        let shownKey = "credential \(credential.serial) of \(login.shownUser)"
        // Unprobed, only a signature or a touch not given is the key's word on this credential.
        if !probed && result != Int32(SECUROTP_FIDO_OK) && result != Int32(SECUROTP_FIDO_DENIED) { return nil }
        guard result == Int32(SECUROTP_FIDO_OK) else {
            switch Int(result) {
            case Int(SECUROTP_FIDO_DENIED): session.log(.fidoNotTouched, LOG_NOTICE, "FIDO: \(shownKey): the key was not touched (\(text(errorText)))")
            case Int(SECUROTP_FIDO_PIN_INVALID), Int(SECUROTP_FIDO_PIN_REQUIRED):
                session.log(.fidoPINRefused, LOG_NOTICE, "FIDO: \(shownKey): PIN refused by the key (\(text(errorText)))")
            default: session.log(.fidoKeyFailed, LOG_NOTICE, "FIDO: \(shownKey): \(text(errorText))")
            }
            return result == Int32(SECUROTP_FIDO_DENIED) ? .declined : .refused(PAM_AUTH_ERR)
        }
        let dataLength = assertion.authenticator_data_length
        let signatureLength = assertion.signature_length
        let authenticatorData = withUnsafeBytes(of: &assertion.authenticator_data) { Array($0.prefix(min(dataLength, $0.count))) }
        let signature = withUnsafeBytes(of: &assertion.signature) { Array($0.prefix(min(signatureLength, $0.count))) }
        return .assertion(authenticatorData: authenticatorData, signature: signature)
    }

    /// The C request for one credential at `rpID` (no ID for a resident one), valid inside `body`.
    private static func withRequest(_ credential: FidoCredential, rpID: String,
                                    _ body: (UnsafePointer<securotp_fido_credentials>) -> Int32) -> Int32 {
        credential.keyHandle.withUnsafeBufferPointer { handle in
            var id: UnsafePointer<UInt8>? = handle.baseAddress
            var length = handle.count
            return rpID.withCString { rpIDText in
                withUnsafePointer(to: &id) { ids in
                    withUnsafePointer(to: &length) { lengths in
                        var request = securotp_fido_credentials(rp_id: rpIDText, credential_ids: ids, credential_id_lengths: lengths,
                                                                credential_count: credential.resident ? 0 : 1)
                        return withUnsafePointer(to: &request) { body($0) }
                    }
                }
            }
        }
    }

    /// A C error text, bounded and escaped for syslog.
    private static func text(_ buffer: [CChar]) -> String {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return TerminalText.escaped(TerminalText.bounded(String(decoding: bytes, as: UTF8.self), maxBytes: 255))
    }
}
