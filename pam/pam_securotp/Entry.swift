// The only code in pam_securotp.so besides the libraries: the two entry points libpam looks
// up with dlsym. Everything else is in SecurOTPPAM, which the tests link too.
import CPAM
import SecurOTPPAM

@_cdecl("pam_sm_authenticate")
public func pam_sm_authenticate(_ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32,
                                _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    guard let handle else { return PAM_SYSTEM_ERR }
    var arguments: [String] = []
    if let argv, argc > 0 {
        for index in 0..<Int(argc) {
            if let argument = argv[index] { arguments.append(String(cString: argument)) }
        }
    }
    return PAMAuthentication.authenticate(handle: handle, flags: flags, arguments: arguments)
}

/// Credentials are the business of other modules; the second factor has none to set.
@_cdecl("pam_sm_setcred")
public func pam_sm_setcred(_ handle: OpaquePointer?, _ flags: Int32, _ argc: Int32,
                           _ argv: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    PAM_SUCCESS
}
