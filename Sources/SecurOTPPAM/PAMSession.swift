import CPAM
import CPosix
import SecurOTPCore

/// The libpam calls the module makes, on one handle: items, conversation, syslog.
struct PAMSession {
    let handle: OpaquePointer
    let silent: Bool
    let debug: Bool
    /// What this call's verification steps decided and said (Refusal).
    let record = StepRecord()

    /// One syslog line starting with its stable code (docs/errors.md); what a validator sent
    /// (reasons, messages) is escaped (TerminalText).
    func log(_ code: ModuleLogCode, _ priority: Int32, _ message: String) {
        Self.log(handle, code, priority, message)
    }

    /// Before a session exists (bad module arguments) too.
    static func log(_ handle: OpaquePointer, _ code: ModuleLogCode, _ priority: Int32, _ message: String) {
        securotp_pam_syslog(handle, priority, "\(code.rawValue): \(TerminalText.escaped(message))")
    }

    /// Lines of the `debug` option: for tracing a login, no code.
    func debugLog(_ message: String) {
        if debug { securotp_pam_syslog(handle, LOG_DEBUG, TerminalText.escaped(message)) }
    }

    /// The user name PAM knows, asking the application if needed.
    func user() -> (code: Int32, name: String?) {
        var name: UnsafePointer<CChar>?
        let code = pam_get_user(handle, &name, nil)
        guard code == PAM_SUCCESS, let name else { return (code == PAM_SUCCESS ? PAM_USER_UNKNOWN : code, nil) }
        return (code, String(cString: name))
    }

    func item(_ type: Int32) -> UnsafePointer<CChar>? {
        var value: UnsafePointer<CChar>?
        guard securotp_pam_get_string_item(handle, type, &value) == PAM_SUCCESS else { return nil }
        return value
    }

    func setItem(_ type: Int32, _ value: UnsafePointer<CChar>) -> Int32 {
        securotp_pam_set_string_item(handle, type, value)
    }

    /// Asks with echo off. On success the caller owns `response` and must release it with
    /// `securotp_pam_free_response`, which wipes it.
    func askSecret(_ prompt: String) -> (code: Int32, response: UnsafeMutablePointer<CChar>?) {
        var response: UnsafeMutablePointer<CChar>?
        let code = securotp_pam_prompt(handle, PAM_PROMPT_ECHO_OFF, prompt, &response)
        if code != PAM_SUCCESS {
            securotp_pam_free_response(response)
            // PAM_CONV_AGAIN means "call me again" (Module Writers' Guide): PAM_INCOMPLETE.
            return (code == PAM_CONV_AGAIN ? PAM_INCOMPLETE : code, nil)
        }
        guard let response else { return (PAM_CONV_ERR, nil) }
        return (PAM_SUCCESS, response)
    }

    /// PAM_SILENT silences messages, never prompts.
    func tell(_ message: String) { show(PAM_TEXT_INFO, message) }

    /// An error the user must read to go on (a refused PIN); PAM_SILENT still silences it.
    func error(_ message: String) { show(PAM_ERROR_MSG, message) }

    private func show(_ style: Int32, _ message: String) {
        record.explanation = message
        guard !silent else { return }
        var ignored: UnsafeMutablePointer<CChar>?
        _ = securotp_pam_prompt(handle, style, message, &ignored)
        securotp_pam_free_response(ignored)
    }
}
