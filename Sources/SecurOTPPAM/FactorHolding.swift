import CPAM
import SecurOTPCore
import SecurOTPStore

/// Whether a user holds a second factor at all, usable now or not (docs/security.md, "Holding a
/// factor is not being able to use it now"). `nullok` (pam_u2f's `nouserok`) asks only this, and
/// asks it before any order, policy, lock or block narrows what may be used: a user who holds a
/// blocked device, a cloned key, a key that `methods` leaves out or that is not attached is
/// prompted and refused like everyone, never skipped. Remote mode's answer is the validator's
/// (`PreflightAnswer.holdsFactor`); this is local mode's, from every source the module reads.
enum FactorHolding {
    /// Local mode: the store (active tokens, FIDO credentials in any state, push devices in any
    /// state but pending: `Store.holdsFactor`) and the user's line in `authfile=`. What cannot
    /// be read counts as held: in doubt the user is prompted, never skipped (a store that cannot
    /// be opened is reported by the step that opens it next, a mapping file here).
    static func local(_ login: LoginContext) -> Bool {
        let settings = login.settings
        do {
            let holds = try StoreCache.shared.withStore(settings.paths) { (store) throws(StoreError) in try store.holdsFactor(user: login.user) }
            if holds { return true }
        } catch {
            // The step that opens the store next reports it (SOTP-M011) and fails closed.
            return true
        }
        return holdsMappingFileKey(login)
    }

    /// The user has a line in `authfile=` (pam_u2f's mapping file), whatever the credentials on
    /// it or the order: a missing file with `nouserok` holds nothing; a file that cannot be
    /// used counts as held.
    private static func holdsMappingFileKey(_ login: LoginContext) -> Bool {
        let fido = login.settings.fido
        guard !fido.authFile.isEmpty else { return false }
        let bytes: [UInt8]
        do {
            bytes = try U2FMappingFile.read(fido.authFile)
        } catch where error.code == .missing {
            return false
        } catch {
            login.session.log(.holdingUnreadable, LOG_WARNING, "cannot read whether \(login.shownUser) holds a key in authfile= (\(error.message)); nullok does not apply, prompting")
            return true
        }
        return U2FMappingFile.userHasLine(login.user, in: bytes)
    }
}
