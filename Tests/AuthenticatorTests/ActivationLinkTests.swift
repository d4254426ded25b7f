@testable import securotp_authenticator
import SecurOTPAuthenticator
import Testing

/// `activate` takes the link `securotp device add` prints (securotp-activate:URL?code=CODE).
@Suite("securotp-authenticator activate: the securotp-activate: link")
struct ActivationLinkTests {
    static let link = "securotp-activate:https://otp.example.com:8443?code=ABCD-EFGH-JKMN-PQRS"

    @Test("The link gives the code and the validator; --server is optional and must agree")
    func linkGivesCodeAndServer() throws {
        let parsed = try ActivationLink(Self.link)
        #expect(parsed.code == "ABCD-EFGH-JKMN-PQRS" && parsed.server == "https://otp.example.com:8443")
        #expect(try Activate.codeAndServer(Self.link, server: nil) == ("ABCD-EFGH-JKMN-PQRS", "https://otp.example.com:8443"))
        #expect(try Activate.codeAndServer(Self.link, server: "HTTPS://OTP.example.com:8443/").server == "https://otp.example.com:8443")
        #expect(try Activate.codeAndServer("ABCD-EFGH-JKMN-PQRS", server: "https://otp.example.com").code == "ABCD-EFGH-JKMN-PQRS")
        #expect(try Activate.codeAndServer("SECUROTP-ACTIVATE:http://127.0.0.1:8443?code=abcd", server: nil).server == "http://127.0.0.1:8443")
    }

    @Test("A link and a --server that disagree are refused, naming both")
    func disagreementRefused() {
        #expect {
            _ = try Activate.codeAndServer(Self.link, server: "https://evil.example.com:8443")
        } throws: { error in
            let message = (error as? AuthenticatorError)?.message ?? ""
            return message.contains("otp.example.com:8443") && message.contains("evil.example.com") && message.contains("--server")
        }
        #expect(throws: AuthenticatorError.self) { try Activate.codeAndServer(Self.link, server: "https://otp.example.com:9443") }
        #expect(throws: AuthenticatorError.self) { try Activate.codeAndServer("ABCD-EFGH-JKMN-PQRS", server: nil) }
    }

    @Test("Parsing is strict and bounded", arguments: [
        "securotp-activate:https://otp.example.com",                              // no code
        "securotp-activate:https://otp.example.com?code=",                        // empty code
        "securotp-activate:https://otp.example.com?code=ABCD&server=x",           // a second parameter
        "securotp-activate:https://otp.example.com?code=AB?CD",                   // two ?
        "securotp-activate:https://otp.example.com?code=AB%20CD",                 // escapes are not codes
        "securotp-activate:https://otp.example.com?code=AB\u{1b}[2JCD",           // control bytes
        "securotp-activate:https://otp.example.com?code=ABCD#frag",
        "securotp-activate:ftp://otp.example.com?code=ABCD",                      // not http(s)
        "securotp-activate:https://user@otp.example.com?code=ABCD",               // credentials in the URL
        "securotp-activate:otp.example.com?code=ABCD",                            // no scheme
        "securotp-activate: https://otp.example.com?code=ABCD",                   // space
        "securotp-activate:https://otp.example.com?code=" + String(repeating: "A", count: 65),
        "securotp-activate:https://" + String(repeating: "a", count: 3000) + "?code=ABCD",
        "securotp-activate:https://ötp.example.com?code=ABCD",                    // not ASCII
    ])
    func strict(_ text: String) {
        #expect(throws: AuthenticatorError.self) { try ActivationLink(text) }
        #expect(throws: AuthenticatorError.self) { try Activate.codeAndServer(text, server: nil) }
    }

    @Test("An error quotes the bad link escaped and bounded")
    func errorsEscaped() {
        let hostile = "securotp-activate:https://x?code=\u{1b}]0;owned\u{07}" + String(repeating: "A", count: 5000)
        #expect {
            _ = try ActivationLink(hostile)
        } throws: { error in
            let message = (error as? AuthenticatorError)?.message ?? ""
            return !message.contains("\u{1b}") && message.utf8.count < 600
        }
    }
}
