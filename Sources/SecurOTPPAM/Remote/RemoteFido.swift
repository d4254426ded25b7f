import CPAM
import CPosix
import SecurOTPCore
import SecurOTPEngine
import SecurOTPStore

/// Remote mode's security-key step (docs/fido.md, "Remote mode"): the validator keeps the
/// credentials and counters, issues the challenge (`/v1/fido/challenge`) and checks the
/// assertion (`/v1/fido/verify`); this host finds the key and asks for the touch (FidoTouch,
/// as in local mode) — for its own origin only, over client data it builds itself from the
/// validator's challenge (docs/security.md, "A security key signs only for this host"). A
/// validator that cannot be asked fails the FIDO step closed: the next method follows.
enum RemoteFido {
    static func attempt(_ login: LoginContext, client: ValidatorClient, validator: String) -> FidoLogin.Outcome {
        let session = login.session
        let fido = login.settings.fido
        var fields: [(key: String, value: JSONWriter.Field)] = [(key: "user", value: .text(login.user)), (key: "origin", value: .text(fido.effectiveOrigin))]
        if fido.effectiveAppID != fido.effectiveOrigin { fields.append((key: "appid", value: .text(fido.effectiveAppID))) }
        let offer: ChallengeAnswer
        do throws(ValidatorFailure) {
            guard let answer = ChallengeAnswer(try client.post(.fidoChallenge, JSONWriter.object(fields))) else {
                throw ValidatorFailure.unavailable("unreadable FIDO challenge")
            }
            offer = answer
        } catch {
            session.log(.fidoValidatorNoChallenge, LOG_WARNING, "FIDO: validator \(validator) gave no challenge for \(login.shownUser) (\(error.logText)); not asking for the security key")
            return .unavailable
        }
        guard !offer.credentials.isEmpty else {
            session.log(.fidoNoCredentialForOrigin, LOG_NOTICE, "FIDO: the validator offers no credential of \(login.shownUser) for origin \(TerminalText.quoted(fido.effectiveOrigin)) (none, cloned, another origin, or locked)")
            return .unavailable
        }
        // The key signs only for this host: a credential the validator says was made for another
        // RP ID is dropped and logged, never asked for (FidoSettings.ownRPID, local mode's rule).
        var own: [FidoCredential] = []
        for credential in offer.credentials {
            guard fido.ownRPID(forCredentialMadeFor: credential.origin) != nil else {
                session.log(.fidoForeignCredentialDropped, LOG_WARNING, "FIDO: validator \(validator) offered credential \(credential.serial) of \(login.shownUser) for origin \(TerminalText.quoted(credential.origin)), not this host's \(TerminalText.quoted(fido.effectiveOrigin)); dropped, the key is not asked for it")
                continue
            }
            own.append(credential)
        }
        // pam_u2f's userpresence=, userverification=, pinverification= set what the key is
        // asked for; the validator checks against the enrolled attributes.
        let usable = own.prefix(fido.maxDevices).map { credential in
            var effective = credential
            effective.presence = fido.userPresence ?? credential.presence
            effective.verification = fido.userVerification ?? credential.verification
            effective.pin = fido.pinVerification ?? credential.pin
            return effective
        }
        guard !usable.isEmpty, FidoTouch.load(login), let asked = FidoTouch.assertion(login, Array(usable), challenge: offer.challenge) else {
            return .unavailable
        }
        let (credential, touched) = (asked.credential, asked.result)
        var verify: [(key: String, value: JSONWriter.Field)] = [(key: "user", value: .text(login.user)), (key: "id", value: .text(offer.id)),
                                                                 (key: "serial", value: .text(credential.serial))]
        switch touched {
        case .assertion(let authenticatorData, let signature):
            // What the key signed after its authenticator data is SHA-256 of these bytes.
            verify.append((key: "client_data", value: .text(Base64.encode(asked.clientData, .url))))
            verify.append((key: "authenticator_data", value: .text(Base64.encode(authenticatorData, .url))))
            verify.append((key: "signature", value: .text(Base64.encode(signature, .url))))
        case .declined, .refused:
            // Counted on the validator like a wrong code, as local mode counts it.
            verify.append((key: "declined", value: .bool(true)))
        }
        let shownKey = "credential \(credential.serial) of \(login.shownUser)"
        let answer: VerifyAnswer
        do throws(ValidatorFailure) {
            guard let parsed = VerifyAnswer(try client.post(.fidoVerify, JSONWriter.object(verify))) else {
                throw ValidatorFailure.unavailable("unreadable verification answer")
            }
            answer = parsed
        } catch {
            session.log(.fidoValidatorNoCheck, LOG_WARNING, "FIDO: validator \(validator) did not check \(shownKey) (\(error.logText)); the security key is not accepted")
            if case .assertion = touched { return .unavailable }
            return outcome(of: touched)
        }
        guard case .assertion = touched else { return outcome(of: touched) }
        switch answer.result {
        case .accept:
            session.log(.fidoAccepted, LOG_INFO, "FIDO: accepted \(shownKey) [validator]")
            return .accepted
        case .locked:
            session.log(.fidoLocked, LOG_NOTICE, "FIDO: \(login.shownUser) is locked [validator]")
            return .refused(PAM_AUTH_ERR)
        case .reject, .challenge:
            let line = "FIDO: \(shownKey) refused: \(answer.reason) [validator]\(answer.lockedNow ? "; now locked" : "")"
            if answer.reason.hasSuffix("the key was cloned") {
                session.log(.fidoCloned, LOG_ALERT, line)
            } else {
                session.log(.fidoRefused, LOG_NOTICE, line)
            }
            return .refused(PAM_AUTH_ERR)
        }
    }

    private static func outcome(of touched: FidoTouch.Result) -> FidoLogin.Outcome {
        switch touched {
        case .declined: .declined
        case .refused(let code): .refused(code)
        case .assertion: .refused(PAM_AUTH_ERR)
        }
    }

    /// `/v1/fido/challenge`'s answer, every field checked before use. The challenge is 32
    /// bytes this host puts into its own client data (FidoClientData), never a hash to sign; an
    /// answer without it (a validator from before issue 25, which sends `client_data_hash`)
    /// is unreadable: the key is not asked.
    struct ChallengeAnswer {
        let id: String
        let challenge: [UInt8]
        let credentials: [FidoCredential]

        init?(_ json: JSONValue) {
            guard let id = json["id"]?.string, ValidatorText.isChallengeID(id),
                  let challengeText = json["challenge"]?.string, challengeText.utf8.count <= 64,
                  let challenge = Base64.decode(challengeText, .url), challenge.count == FidoClientData.challengeLength,
                  let items = json["credentials"]?.array, items.count <= 256 else { return nil }
            var credentials: [FidoCredential] = []
            for item in items {
                guard let serial = item["serial"]?.string, (1...64).contains(serial.utf8.count),
                      serial.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || $0 == 0x2d }),
                      let handleText = item["key_handle"]?.string, handleText.utf8.count <= 2 * FidoCredential.maxKeyHandle,
                      let handle = Base64.decode(handleText, .url), !handle.isEmpty, handle.count <= FidoCredential.maxKeyHandle,
                      let typeName = item["type"]?.string, let type = FidoCredential.KeyType(rawValue: typeName),
                      let origin = item["origin"]?.string, (1...255).contains(origin.utf8.count),
                      let presence = item["presence"]?.bool, let verification = item["verification"]?.bool, let pin = item["pin"]?.bool
                else { return nil }
                // The key checks nothing of the public key: the validator does.
                var credential = FidoCredential(keyHandle: handle, publicKey: [], type: type, presence: presence, verification: verification,
                                                pin: pin, origin: origin)
                credential.serial = serial
                credentials.append(credential)
            }
            self.id = id
            self.challenge = challenge
            self.credentials = credentials
        }
    }
}
