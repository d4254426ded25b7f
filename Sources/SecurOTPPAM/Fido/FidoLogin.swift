import CFido2
import CPAM
import CPosix
import SecurOTPCore
import SecurOTPStore

/// Local mode's FIDO step (docs/fido.md): for a user with FIDO credentials it runs before the
/// passcode prompt. Like pam_u2f, per credential: find an attached key that holds it, ask
/// for the touch, take an assertion over a fresh random challenge (in the client data this host
/// builds, FidoClientData, as in remote mode); unlike pam_u2f, the module
/// checks the assertion itself and the signature counter must rise.
enum FidoLogin {
    enum Outcome: Equatable {
        /// The user has no FIDO credential: the passcode step decides.
        case notEnrolled
        /// No key holding a credential is attached, or libfido2 is missing: the passcode
        /// step decides if the user has a code to give, else the login fails.
        case unavailable
        case accepted
        /// The key was there and the user did not touch it (or it refused): with `methods`
        /// set the next method follows (LoginMethods.explicit), otherwise the login fails.
        case declined
        /// Decided here: the key was there and the login failed (refused touch, wrong PIN,
        /// bad signature, cloned key, lost race).
        case refused(Int32)
    }

    static func attempt(_ login: LoginContext) -> Outcome {
        guard login.known else { return .notEnrolled }
        let session = login.session
        let settings = login.settings
        let fido = settings.fido
        let now = Int64(time(nil))
        let stored: [FidoCredential]
        let locked: Bool
        let hasPasscodes: Bool
        do {
            (stored, locked, hasPasscodes) = try StoreCache.shared.withStore(settings.paths) { (store) throws(StoreError) in
                // One query for the common case, a user without a security key.
                let found = try store.fidoCredentials(user: login.user)
                guard !found.isEmpty || !fido.authFile.isEmpty else { return (found, false, false) }
                return (found, try store.userState(login.user).isLocked(at: now), try store.hasActivePasscodeTokens(user: login.user))
            }
        } catch {
            // The passcode step opens the store again and reports what is wrong.
            return .notEnrolled
        }
        var credentials = stored
        // A user the mapping file names is a key holder, whatever the line holds.
        var namedInFile = false
        if !fido.authFile.isEmpty {
            switch mappingFileCredentials(login, storeHas: stored) {
            case .some(let fromFile): (credentials, namedInFile) = (credentials + fromFile.credentials, fromFile.named)
            case .none: return .refused(PAM_AUTHINFO_UNAVAIL)
            }
        }
        guard !credentials.isEmpty || namedInFile else { return .notEnrolled }
        // Without a key the passcode step decides, if the user has a code to give.
        let unavailable: Outcome = hasPasscodes ? .unavailable : .refused(PAM_AUTH_ERR)
        if locked {
            session.log(.fidoLocked, LOG_NOTICE, "FIDO: \(login.shownUser) is locked; not asking for the security key")
            return .refused(PAM_AUTH_ERR)
        }
        let origin = fido.effectiveOrigin
        // pam_u2f's userpresence=, userverification=, pinverification= override each credential's attributes.
        let usable = credentials.filter { !$0.cloned && fido.ownRPID(forCredentialMadeFor: $0.origin) != nil }.prefix(fido.maxDevices).map { credential in
            var effective = credential
            effective.presence = fido.userPresence ?? credential.presence
            effective.verification = fido.userVerification ?? credential.verification
            effective.pin = fido.pinVerification ?? credential.pin
            return effective
        }
        guard !usable.isEmpty else {
            let elsewhere = credentials.filter { !$0.cloned && fido.ownRPID(forCredentialMadeFor: $0.origin) == nil }
            if !elsewhere.isEmpty {
                var origins: [String] = []
                for credential in elsewhere where !origins.contains(credential.origin) { origins.append(credential.origin) }
                let shown = origins.map { TerminalText.quoted($0) }.joined(separator: ", ")
                session.log(.fidoCredentialForOtherOrigin, LOG_NOTICE, "FIDO: \(login.shownUser)'s credential\(elsewhere.count == 1 ? " was" : "s were") made for origin \(shown), not for this host's origin \(TerminalText.quoted(origin)); not asking for the key (set origin= to the registration's, or re-import with securotp import --origin)")
                return unavailable
            }
            if credentials.isEmpty {
                session.log(.fidoMappingLineUnusable, LOG_NOTICE, "FIDO: the mapping file \(TerminalText.quoted(fido.authFile)) has a line for \(login.shownUser) without a credential that can be used; a key holder without a usable key: not passing them on")
                return unavailable
            }
            session.log(.fidoNoCredentialForOrigin, LOG_NOTICE, "FIDO: no usable credential of \(login.shownUser) for origin \(TerminalText.quoted(origin)) (cloned or made for another origin)")
            return unavailable
        }
        guard FidoTouch.load(login) else { return unavailable }
        guard let challenge = SecretBytes.random(count: FidoClientData.challengeLength) else {
            session.log(.noRandomness, LOG_ERR, "FIDO: no randomness for a challenge; denying \(login.shownUser)")
            return .refused(PAM_AUTHINFO_UNAVAIL)
        }
        guard let touched = FidoTouch.assertion(login, Array(usable), challenge: challenge.withUnsafeBytes { Array($0) }) else { return unavailable }
        return counted(checked(login, touched.credential, touched.result, clientDataHash: FidoClientData.hash(touched.clientData)), login)
    }

    /// The check of what the key at hand returned for `credential`, and the counter write.
    private static func checked(_ login: LoginContext, _ credential: FidoCredential, _ touched: FidoTouch.Result, clientDataHash: [UInt8]) -> Outcome {
        let session = login.session
        let authenticatorData: [UInt8], signature: [UInt8]
        switch touched {
        case .declined: return .declined
        case .refused(let code): return .refused(code)
        case .assertion(let data, let signed): (authenticatorData, signature) = (data, signed)
        }
        let shownKey = "credential \(credential.serial) of \(login.shownUser)"
        let check = FidoAssertionCheck.verify(authenticatorData: authenticatorData, signature: signature, clientDataHash: clientDataHash,
                                              credential: credential, requirePresence: credential.presence,
                                              requireVerification: credential.verification || credential.pin)
        let now = Int64(time(nil))
        switch check {
        case .refused(let refusal):
            if case .counterNotIncreased = refusal {
                session.log(.fidoCloned, LOG_ALERT, "FIDO: \(shownKey): \(refusal.reason); credential disabled (securotp fido export shows the rest; securotp delete \(login.shownUser) \(credential.serial) removes it)")
                do {
                    try StoreCache.shared.withStore(login.settings.paths) { (store) throws(StoreError) in
                        try store.markFidoCloned(user: login.user, serial: credential.serial)
                    }
                } catch {
                    session.log(.fidoCannotMarkCloned, LOG_ERR, "FIDO: cannot mark \(shownKey) as cloned: \(error.message)")
                }
            } else {
                session.log(.fidoRefused, LOG_NOTICE, "FIDO: \(shownKey) refused: \(refusal.reason)")
            }
            return .refused(PAM_AUTH_ERR)
        case .verified(let counter):
            guard credential.source != mappingFileSource else {
                // The mapping file keeps no counter and is never written (docs/fido.md).
                session.log(.fidoAccepted, LOG_INFO, "FIDO: accepted \(shownKey) (counter \(counter) not kept: a mapping-file credential)")
                return .accepted
            }
            let recorded: Bool
            do {
                recorded = try StoreCache.shared.withStore(login.settings.paths) { (store) throws(StoreError) in
                    try store.acceptFidoCounter(user: login.user, serial: credential.serial, from: credential.counter, to: counter, now: now)
                }
            } catch {
                session.log(.fidoCounterNotRecorded, LOG_ERR, "FIDO: cannot record the counter of \(shownKey), denying: \(error.message)")
                return .refused(PAM_AUTHINFO_UNAVAIL)
            }
            guard recorded else {
                session.log(.fidoConcurrentUse, LOG_NOTICE, "FIDO: \(shownKey): another login used the credential at the same time; denying this one")
                return .refused(PAM_AUTH_ERR)
            }
            session.log(.fidoAccepted, LOG_INFO, "FIDO: accepted \(shownKey) (counter \(counter))")
            return .accepted
        }
    }

    /// A refusal after the key was asked (a touch not given included, whether or not another
    /// method follows) counts towards the user's lockout like a wrong code;
    /// an acceptance clears the count. A store that cannot record the failure denies.
    private static func counted(_ outcome: Outcome, _ login: LoginContext) -> Outcome {
        let now = Int64(time(nil))
        do {
            switch outcome {
            case .declined, .refused(PAM_AUTH_ERR):
                let (failures, lockedNow) = try StoreCache.shared.withStore(login.settings.paths) { (store) throws(StoreError) in
                    try store.recordFidoFailure(user: login.user, policy: login.settings.policy, now: now)
                }
                if lockedNow {
                    login.session.log(.fidoLockedNow, LOG_NOTICE, "FIDO: \(login.shownUser) locked after \(failures) failures (securotp unlock \(login.shownUser) lifts it)")
                }
            case .accepted:
                try StoreCache.shared.withStore(login.settings.paths) { (store) throws(StoreError) in
                    try store.clearFidoFailures(user: login.user, now: now)
                }
            default: break
            }
        } catch {
            login.session.log(.fidoLoginNotRecorded, LOG_ERR, "FIDO: cannot record the login of \(login.shownUser), denying: \(error.message)")
            return .refused(PAM_AUTHINFO_UNAVAIL)
        }
        return outcome
    }

    /// Marks, in memory only, a credential read from `authfile=` (the store's rows never have it:
    /// `securotp import` records the source `mapping-file`).
    static let mappingFileSource = "authfile="

    /// The user's credentials in pam_u2f's mapping file (`authfile=`), read-only, read as
    /// pam_u2f reads it (U2FMappingFile): the user's last line, its first `max_devices`
    /// credentials in the line's order; those that do not parse skipped and logged with file and
    /// line, those whose key handle the store holds left to the store's row (its counter, its
    /// cloned mark). `named`: the file has a line for the user, usable or not — the user holds
    /// a key then and `nouserok` does not apply. Nil (logged) when the file cannot be used: the
    /// login fails closed, unless `nouserok` and the file is missing.
    private static func mappingFileCredentials(_ login: LoginContext, storeHas stored: [FidoCredential]) -> (credentials: [FidoCredential], named: Bool)? {
        let session = login.session
        let fido = login.settings.fido
        let path = fido.authFile
        let bytes: [UInt8]
        do {
            bytes = try U2FMappingFile.read(path)
        } catch where error.code == .missing && login.settings.nullok {
            session.debugLog("FIDO: mapping file \(path) does not exist; nouserok: no credentials there")
            return ([], false)
        } catch {
            session.log(.fidoMappingFileError, LOG_ERR, "FIDO: mapping file (authfile=): \(error.message); denying \(login.shownUser)")
            return nil
        }
        guard let line = U2FMappingFile.line(for: login.user, in: bytes, origin: fido.effectiveOrigin, appID: fido.effectiveAppID) else {
            return ([], false)
        }
        // pam_u2f reads no more than max_devices credentials of the line, bad ones included.
        var credentials: [FidoCredential] = []
        for (index, entry) in line.entries.prefix(fido.maxDevices).enumerated() {
            guard let credential = entry.credential else {
                session.log(.fidoMappingLineSkipped, LOG_NOTICE, "FIDO: \(path):\(line.number): credential \(index + 1): \(entry.problem); skipped (securotp import \(login.shownUser) \(path) shows every problem)")
                continue
            }
            guard !stored.contains(where: { $0.isSameCredential(as: credential) }) else { continue }
            var fromFile = credential
            fromFile.serial = "\(path):\(line.number)#\(index + 1)"
            fromFile.source = mappingFileSource
            credentials.append(fromFile)
        }
        return (credentials, true)
    }
}
