/// Stable codes for every line the PAM module logs and every error the CLIs exit with, so an
/// admin can grep for one and look it up in docs/errors.md (what it means, what to do). The API's
/// error codes are ServiceError.Code's strings (SecurOTPService), listed in the same document.
/// A code keeps its meaning for ever: new situations get new numbers, a retired code is not
/// reused. docs/errors.md and these lists are kept equal by ErrorCatalogueTests.

/// What the module logged (syslog, auth facility), at the start of the line: `SOTP-M011: …`.
/// Lines of the `debug` option carry no code.
public enum ModuleLogCode: String, Sendable, CaseIterable {
    // Start of a login (PAMAuthentication)
    case configurationError = "SOTP-M001"
    case userUnknown = "SOTP-M002"
    case methodsUnreadable = "SOTP-M003"
    case noEarlierPassword = "SOTP-M004"
    case conversationFailed = "SOTP-M005"
    case overlongAnswer = "SOTP-M006"
    case forwardPassFailed = "SOTP-M007"
    // Local verification
    case noRandomness = "SOTP-M010"
    case storeUnavailable = "SOTP-M011"
    case challengeExpired = "SOTP-M012"
    // Outcomes of a step (StepReport)
    case codeAccepted = "SOTP-M020"
    case recoveryCodeAccepted = "SOTP-M021"
    case pushApproved = "SOTP-M022"
    case userLocked = "SOTP-M023"
    case replayRefused = "SOTP-M024"
    case codeRejected = "SOTP-M025"
    case lockedNow = "SOTP-M026"
    case newPINMismatch = "SOTP-M027"
    // Dialogue steps (DialogueRunner)
    case nextCodeAsked = "SOTP-M030"
    case newPINSet = "SOTP-M031"
    case pushAsked = "SOTP-M032"
    case codeInsteadOfPush = "SOTP-M033"
    case newPINRequired = "SOTP-M034"
    case newPINRefused = "SOTP-M035"
    // Remote mode (a securotpd validator)
    case remoteUnusable = "SOTP-M040"
    case validatorUnavailableOffline = "SOTP-M041"
    case deviceCAUnusable = "SOTP-M042"
    case pushNotOpened = "SOTP-M043"
    case approvalConsumed = "SOTP-M044"
    case approvalRefused = "SOTP-M045"
    case validatorDidNotTake = "SOTP-M046"
    case validatorUnavailableDenied = "SOTP-M047"
    case validatorUnavailableFailSafe = "SOTP-M048"
    case hostCredentialRefused = "SOTP-M049"
    case validatorForbidsUser = "SOTP-M050"
    case validatorRateLimiting = "SOTP-M051"
    case validatorRefusedRequest = "SOTP-M052"
    case tooManySteps = "SOTP-M053"
    case validatorLeavesNoMethod = "SOTP-M054"
    case passcodeNotAllowed = "SOTP-M055"
    case groupsUnreadable = "SOTP-M056"
    // This host's offline codes (remote mode)
    case offlineCodesLocked = "SOTP-M060"
    case offlineCodesUnusable = "SOTP-M061"
    case validatorOfflineCodesUnreadable = "SOTP-M062"
    case offlineCacheReplaced = "SOTP-M063"
    case offlineCodesNotKept = "SOTP-M064"
    // FIDO security keys
    case fidoLocked = "SOTP-M070"
    case fidoLockedNow = "SOTP-M071"
    case fidoNoCredentialForOrigin = "SOTP-M072"
    case fidoUnavailable = "SOTP-M073"
    case fidoNoKeyAttached = "SOTP-M074"
    case fidoNotTouched = "SOTP-M075"
    case fidoNextMethod = "SOTP-M076"
    case fidoPINRefused = "SOTP-M077"
    case fidoKeyFailed = "SOTP-M078"
    case fidoCloned = "SOTP-M079"
    case fidoCannotMarkCloned = "SOTP-M080"
    case fidoRefused = "SOTP-M081"
    case fidoAccepted = "SOTP-M082"
    case fidoCounterNotRecorded = "SOTP-M083"
    case fidoConcurrentUse = "SOTP-M084"
    case fidoLoginNotRecorded = "SOTP-M085"
    case fidoMappingFileError = "SOTP-M086"
    case fidoMappingLineSkipped = "SOTP-M087"
    case fidoOnlyKeysUnusable = "SOTP-M088"
    case fidoValidatorNoChallenge = "SOTP-M089"
    case fidoValidatorNoCheck = "SOTP-M090"
    case offlineCodesDropped = "SOTP-M091"
    // Mapping files read as pam_u2f reads them (issue 25)
    case fidoMappingLineUnusable = "SOTP-M110"
    case fidoCredentialForOtherOrigin = "SOTP-M111"
    // A security key signs only for this host (issue 25; docs/security.md)
    case fidoForeignCredentialDropped = "SOTP-M120"
    // Device approvals: what the user is told, device certificates (issue 25)
    case pushWrongNumber = "SOTP-M140"
    case deviceRevokedUnusable = "SOTP-M141"
    case certificateWithoutExpiry = "SOTP-M142"
    // Holding a factor, and what the host takes on the validator's word (issue 25)
    case holderCannotUseFactor = "SOTP-M100"
    case validatorWidensMethods = "SOTP-M101"
    case notVerifiedByHost = "SOTP-M102"
    case holdingUnreadable = "SOTP-M103"
}

/// Why a CLI (securotp, securotp-authenticator, securotpd at start-up) ended with an error:
/// `securotp: error SOTP-C011: …` on standard error. Each code has one sysexits(3) status.
/// `securotp doctor`, `test` and `import-batch` end with a status after their own report, no code.
public enum CLIErrorCode: String, Sendable, CaseIterable {
    case usage = "SOTP-C001"
    case localStoreOnly = "SOTP-C002"
    case notRoot = "SOTP-C003"
    case cancelled = "SOTP-C004"
    case noSuchSystemUser = "SOTP-C005"
    case inputUnreadable = "SOTP-C006"
    case unexpected = "SOTP-C009"
    // The service's codes (ServiceError.Code), one each, so local and --server runs agree
    case invalidInput = "SOTP-C010"
    case notFound = "SOTP-C011"
    case limit = "SOTP-C012"
    case conflict = "SOTP-C013"
    case importInvalid = "SOTP-C014"
    case importDenied = "SOTP-C015"
    case unauthorized = "SOTP-C016"
    case forbidden = "SOTP-C017"
    case rateLimited = "SOTP-C018"
    case unavailable = "SOTP-C019"
    case missing = "SOTP-C020"
    case permissions = "SOTP-C021"
    case config = "SOTP-C022"
    case corrupt = "SOTP-C023"
    case database = "SOTP-C024"
    case system = "SOTP-C025"
    case notSupported = "SOTP-C026"
    // securotp-authenticator's own
    case otherDevice = "SOTP-C030"
    case refused = "SOTP-C031"
    case importPassword = "SOTP-C032"
    case importDeviceBinding = "SOTP-C033"
    case answerNotTaken = "SOTP-C034"
    // FIDO security keys (securotp fido)
    case fidoPINRequired = "SOTP-C040"
    case fidoNotTouched = "SOTP-C041"
    case fidoKeyFailed = "SOTP-C042"
    case fidoNoCredential = "SOTP-C043"

    /// sysexits(3): scripts tell bad input from a broken installation.
    public var exitStatus: Int32 {
        switch self {
        case .cancelled, .unexpected: 1
        case .usage, .localStoreOnly, .notSupported: 64                        // EX_USAGE
        case .invalidInput, .importInvalid, .corrupt, .answerNotTaken,
             .fidoPINRequired, .fidoNotTouched, .fidoKeyFailed: 65            // EX_DATAERR
        case .inputUnreadable, .missing, .fidoNoCredential: 66                // EX_NOINPUT
        case .notFound, .noSuchSystemUser: 67                                 // EX_NOUSER
        case .unavailable: 69                                                 // EX_UNAVAILABLE
        case .system: 71                                                      // EX_OSERR
        case .limit, .conflict: 73                                            // EX_CANTCREAT
        case .database: 74                                                    // EX_IOERR
        case .rateLimited: 75                                                 // EX_TEMPFAIL
        case .notRoot, .importDenied, .unauthorized, .forbidden, .permissions,
             .otherDevice, .refused, .importPassword, .importDeviceBinding: 77 // EX_NOPERM
        case .config: 78                                                      // EX_CONFIG
        }
    }

    /// The line a CLI prints on standard error.
    public func line(program: String, _ message: String) -> String {
        "\(program): error \(rawValue): \(message)\n"
    }
}
