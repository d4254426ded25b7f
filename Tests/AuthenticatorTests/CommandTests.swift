import Foundation
@testable import securotp_authenticator
import SecurOTPAuthenticator
import SecurOTPCore
import Testing

/// securotp-authenticator's commands run in-process against an injected Context: a store in
/// a scratch directory, a fixed identity and clock, the output collected.
@Suite("securotp-authenticator commands in-process")
struct AuthenticatorCommandTests {
    final class Printed: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func append(_ more: String) { lock.withLock { text += more } }
        func take() -> String { lock.withLock { defer { text = "" }; return text } }
    }

    @Test("import, list, code (HOTP moves on), nickname and delete print what the command line prints")
    func tokenLifecycle() throws {
        let scratch = try Scratch()
        let printed = Printed()
        let context = Context(paths: scratch.paths, identity: Scratch.me, now: Scratch.now, output: { printed.append($0) })

        // RFC 4226's test secret ("12345678901234567890"): codes 755224, 287082, ...
        let uri = "otpauth://hotp/ACME:alice?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=ACME&counter=0"
        try Import.parse([uri, "--format", "json"]).run(in: context)
        let imported = try #require(try JSONSerialization.jsonObject(with: Data(printed.take().utf8)) as? [[String: Any]])
        let serial = try #require(imported.first?["serial"] as? String)
        #expect(imported.count == 1 && imported[0]["kind"] as? String == "hotp" && imported[0]["counter"] as? Int == 0, "\(imported)")

        try List.parse([]).run(in: context)
        let listing = printed.take()
        #expect(listing.hasPrefix("SERIAL") && listing.contains(serial) && listing.contains("counter 0"), "\(listing)")

        try Code.parse([]).run(in: context)
        #expect(printed.take().contains("  code     755224  (counter 0;"))
        try Code.parse([serial, "--format", "json"]).run(in: context)
        let second = try #require(try JSONSerialization.jsonObject(with: Data(printed.take().utf8)) as? [String: Any])
        #expect(second["current"] as? String == "287082" && second["counter"] as? Int == 1, "\(second)")

        try Nickname.parse([serial, "work"]).run(in: context)
        #expect(printed.take() == "Token \(serial) is now called \"work\".\n")
        try Delete.parse([serial]).run(in: context)
        #expect(printed.take() == "Deleted token \(serial).\n")
        try List.parse([]).run(in: context)
        #expect(printed.take() == "No tokens yet. Import one with: securotp-authenticator import SOURCE\n")
    }

    @Test("binding-id prints the store's binding ID; code asks no PIN of a token that takes none")
    func bindingIDAndPIN() throws {
        let scratch = try Scratch()
        let printed = Printed()
        var context = Context(paths: scratch.paths, identity: Scratch.me, now: Scratch.now, output: { printed.append($0) })
        try BindingIDCommand.parse([]).run(in: context)
        let id = printed.take()
        #expect(id == (try scratch.open().bindingID) + "\n")

        var asked: [String] = []
        context.secretLine = { prompt, _ in
            asked.append(prompt)
            return Array("1234".utf8)
        }
        // Without a PINPad token the PIN is never asked for.
        try Import.parse(["otpauth://totp/alice?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"]).run(in: context)
        _ = printed.take()
        try Code.parse([]).run(in: context)
        #expect(asked.isEmpty)
        #expect(printed.take().contains("  current  "))
    }
}
