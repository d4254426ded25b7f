// A real libpam handle (pam_start_confdir; nothing is authenticated on it) whose conversation
// answers from a script and records what the module showed: the module's conversation code
// runs as it does under sudo, su or sshd, without a store or a validator.
import CPAM
import Foundation
import SecurOTPStore
import Testing
@testable import SecurOTPPAM

/// A conversation that answers prompts from a script and records everything shown.
final class Script {
    var answers: [String]
    var transcript: [String] = []
    init(_ answers: [String]) { self.answers = answers }
}

/// A real PAM handle whose conversation is a Script.
final class ScriptedHandle {
    let handle: OpaquePointer
    let script: Script
    private let directory: String

    init(_ answers: [String], user: String = "alice") throws {
        script = Script(answers)
        directory = NSTemporaryDirectory() + "securotp-auth-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "auth required pam_deny.so\n".write(toFile: directory + "/unit", atomically: true, encoding: .utf8)
        var conversation = pam_conv(conv: { count, messages, responses, data in
            guard let data, let messages, let responses, count > 0 else { return PAM_CONV_ERR }
            let script = Unmanaged<Script>.fromOpaque(data).takeUnretainedValue()
            guard let replies = calloc(Int(count), MemoryLayout<pam_response>.stride)?.assumingMemoryBound(to: pam_response.self) else {
                return PAM_BUF_ERR
            }
            for index in 0..<Int(count) {
                guard let message = messages[index]?.pointee else { free(replies); return PAM_CONV_ERR }
                let text = String(cString: message.msg)
                switch message.msg_style {
                case PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON:
                    script.transcript.append("prompt: " + text)
                    guard !script.answers.isEmpty else {
                        for done in 0..<index { free(replies[done].resp) }
                        free(replies)
                        return PAM_CONV_ERR
                    }
                    replies[index].resp = strdup(script.answers.removeFirst())
                case PAM_TEXT_INFO: script.transcript.append("info: " + text)
                case PAM_ERROR_MSG: script.transcript.append("error: " + text)
                default:
                    free(replies)
                    return PAM_CONV_ERR
                }
            }
            responses.pointee = replies
            return PAM_SUCCESS
        }, appdata_ptr: Unmanaged.passUnretained(script).toOpaque())
        var handle: OpaquePointer?
        let code = pam_start_confdir("unit", user, &conversation, directory, &handle)
        guard code == PAM_SUCCESS, let handle else { throw PAMStartFailed(code: code) }
        self.handle = handle
    }

    deinit {
        pam_end(handle, PAM_SUCCESS)
        try? FileManager.default.removeItem(atPath: directory)
    }

    func login(silent: Bool = false, settings: Settings = Settings(), user: String = "alice") -> LoginContext {
        LoginContext(session: PAMSession(handle: handle, silent: silent, debug: false), settings: settings, user: user,
                     shownUser: user, known: true, validName: true)
    }
}

struct PAMStartFailed: Error { let code: Int32 }

