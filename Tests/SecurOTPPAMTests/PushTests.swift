// The module's push pieces that need no validator: the number's uniformity, the login context
// (cleaning, bounds, sudo's command line) and the parsers of the validator's push answers.
import Foundation
import SecurOTPCore
import SecurOTPStore
import Testing
@testable import SecurOTPPAM

@Suite("Push approval: number, nonce, context and answers")
struct PushTests {
    @Test("The number: six digits, the biased top of the 32-bit range rejected")
    func number() {
        #expect(PushChallenge.number(from: 0) == "000000")
        #expect(PushChallenge.number(from: 492_817) == "492817")
        #expect(PushChallenge.number(from: 1_000_007) == "000007")
        // 4,294,000,000 = 4294 × 10^6 is the first value that would favour 000000–967295.
        #expect(PushChallenge.number(from: 4_293_999_999) == "999999")
        #expect(PushChallenge.number(from: 4_294_000_000) == nil)
        #expect(PushChallenge.number(from: UInt32.max) == nil)
    }

    @Test("Nonce and number from the kernel: 43 base64url characters, six digits, different each time")
    func challenge() throws {
        let first = try #require(PushChallenge.make())
        let second = try #require(PushChallenge.make())
        #expect(first.nonce.utf8.count == 43 && Base64.decode(first.nonce, .url)?.count == 32)
        #expect(first.number.utf8.count == 6 && first.number.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 })
        #expect(first.nonce != second.nonce)
    }

    @Test("Context fields: control and bidi characters as '?', invalid UTF-8 replaced, cut at a character with '…'")
    func cleaned() {
        func clean(_ bytes: [UInt8], _ limit: Int) -> String { bytes.withUnsafeBufferPointer { PushContext.cleaned($0, limit: limit) } }
        #expect(clean(Array("pts/1".utf8), 64) == "pts/1")
        #expect(clean(Array("a\u{1b}[2Jb\u{202e}c".utf8), 64) == "a?[2Jb?c")
        #expect(clean([0x61, 0xff, 0x62], 64) == "a\u{fffd}b")
        let long = clean(Array(String(repeating: "é", count: 200).utf8), 64)
        #expect(long.utf8.count <= 64 && long.hasSuffix("…") && long.hasPrefix("éé"))
        #expect(clean(Array(String(repeating: "x", count: 64).utf8), 64) == String(repeating: "x", count: 64))
    }

    @Test("sudo's command line: program base name and arguments, bounded to 256 bytes")
    func sudoCommandLine() {
        func line(_ words: [String]) -> String {
            let bytes: [UInt8] = words.flatMap { Array($0.utf8) + [UInt8(0)] }
            return bytes.withUnsafeBufferPointer { SudoCommand.commandLine($0) }
        }
        #expect(line(["/usr/bin/sudo", "-u", "www", "systemctl", "restart", "nginx"]) == "sudo -u www systemctl restart nginx")
        #expect(line(["sudoedit", "/etc/hosts"]) == "sudoedit /etc/hosts")
        #expect(line(["sudo", "printf", "\u{1b}]0;x\u{7}"]) == "sudo printf ?]0;x?")
        let long = line(["sudo", String(repeating: "a", count: 1000)])
        #expect(long.utf8.count <= 256 && long.hasSuffix("…"))
        #expect(line([]) == "")
    }

    @Test("Preflight's push: absent means no push; a non-boolean is an unreadable answer")
    func preflight() throws {
        func parse(_ text: String) -> PreflightAnswer? { JSONReader.parse(Array(text.utf8)).flatMap(PreflightAnswer.init) }
        #expect(parse(#"{"has_tokens":true,"code_digits":[6]}"#)?.push == false)
        #expect(parse(#"{"has_tokens":false,"code_digits":[],"push":true}"#)?.push == true)
        #expect(parse(#"{"has_tokens":true,"code_digits":[6],"push":"yes"}"#) == nil)
    }

    @Test("The push answer: id, expiry and host name checked before they reach a log or a statement")
    func opened() {
        func parse(_ text: String) -> OpenedPush? { JSONReader.parse(Array(text.utf8)).flatMap(OpenedPush.init) }
        let id = "pr" + String(repeating: "0a", count: 16)
        #expect(parse(#"{"id":"\#(id)","expires":1764120000,"host":"web-01"}"#)?.host == "web-01")
        #expect(parse(#"{"id":"\#(id)","expires":1764120000}"#) == nil, "no host: the statement cannot be rebuilt")
        #expect(parse(#"{"id":"\#(id)","expires":1764120000,"host":"web\u001b[2J"}"#) == nil)
        #expect(parse(#"{"id":"pr123","expires":1764120000,"host":"web-01"}"#) == nil)
        #expect(parse(#"{"id":"\#(id.uppercased())","expires":1764120000,"host":"web-01"}"#) == nil)
        #expect(parse(#"{"id":"\#(id)","expires":-1,"host":"web-01"}"#) == nil)
    }

    @Test("The wait answer: states as listed, an approval with `approved` or `consumed` only, about this request only")
    func waitAnswer() {
        let id = "pr" + String(repeating: "0a", count: 16)
        func parse(_ text: String, id: String = "pr" + String(repeating: "0a", count: 16)) -> PushWaitAnswer? {
            JSONReader.parse(Array(text.utf8)).flatMap { PushWaitAnswer($0, id: id) }
        }
        let approval = #"{"device":"dv0123456789abcdef","aaid":"FFFF#0001","public_key":"AAEC","authenticator_data":"AAEC","client_data_json":"e30","signature":"AAEC"}"#
        #expect(parse(#"{"id":"\#(id)","state":"pending","expires":1}"#)?.state == .pending)
        #expect(parse(#"{"id":"\#(id)","state":"denied","expires":1}"#)?.state == .denied)
        #expect(parse(#"{"id":"\#(id)","state":"approved","expires":1,"approval":\#(approval)}"#)?.approval?.device == "dv0123456789abcdef")
        #expect(parse(#"{"id":"\#(id)","state":"consumed","expires":1,"approval":\#(approval)}"#)?.approval != nil, "consumed as it is handed out")
        #expect(parse(#"{"id":"\#(id)","state":"consumed","expires":1}"#)?.approval == nil)
        #expect(parse(#"{"id":"\#(id)","state":"approved","expires":1}"#) == nil, "approved without an approval")
        #expect(parse(#"{"id":"\#(id)","state":"denied","expires":1,"approval":\#(approval)}"#) == nil, "an approval with another state")
        #expect(parse(#"{"id":"\#(id)","state":"granted","expires":1}"#) == nil)
        #expect(parse(#"{"id":"\#(id)","state":"pending","expires":1}"#, id: "pr" + String(repeating: "1b", count: 16)) == nil, "about another request")
        let badDevice = approval.replacingOccurrences(of: "dv0123456789abcdef", with: "dv0123")
        #expect(parse(#"{"id":"\#(id)","state":"approved","expires":1,"approval":\#(badDevice)}"#) == nil)
        let badBinary = approval.replacingOccurrences(of: #""signature":"AAEC""#, with: #""signature":"AA+C""#)
        #expect(parse(#"{"id":"\#(id)","state":"approved","expires":1,"approval":\#(badBinary)}"#) == nil, "standard base64 where base64url is due")
    }

    @Test("The prompt: the number as one group of six digits; the push texts are plain one-liners")
    func prompt() {
        #expect(DialogueText.approveOnDevice(number: "492817") == "Approve on your device with number 492817, or type a code: ")
        for text in [DialogueText.approvalDenied, DialogueText.approvalExpired, DialogueText.approvalFailed, DialogueText.approvalRefused,
                     DialogueText.approvalUnavailable] {
            #expect(TerminalText.isSafe(text) && text.hasSuffix(".") && !text.contains("\n"))
        }
    }
}
