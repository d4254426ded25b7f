import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// The `key = value` reader of securotp.conf and securotpd.conf (issue 12 §7).
@Suite struct ConfigFileTests {
    @Test func aKeyGivenTwiceNamesBothLines() throws {
        #expect {
            _ = try ConfigFile.entries("# comment\nnullok = no\n\nnullok = yes\n", path: "/etc/securotp/securotp.conf")
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .config && error.message.hasPrefix("/etc/securotp/securotp.conf:4: nullok was already given at line 2")
        }
        #expect(try ConfigFile.entries("nullok = no\ndeny = 3\n", path: "f").map(\.key) == ["nullok", "deny"])
    }

    @Test func aKeyGivenTwiceInTheModuleArgumentsIsAnError() {
        #expect(throws: StoreError(.config, "")) { try Settings.fromModuleArguments(["state_dir=/nonexistent", "nullok", "nullok=no"]) }
        #expect(throws: StoreError(.config, "")) { try Settings.fromModuleArguments(["state_dir=/a", "state_dir=/b"]) }
    }

    @Test func aLongHostileValueIsQuotedShortAndEscaped() {
        var settings = Settings()
        let value = "\u{1b}[2J\u{202E}" + String(repeating: "7", count: 60_000)
        #expect {
            try settings.apply(fileText: "deny = \(value)\n", path: "/etc/securotp/securotp.conf")
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.message.utf8.count < 300 && error.message.contains("\\x1b[2J\\u{202e}777")
                && error.message.contains("(60007 bytes)") && !error.message.unicodeScalars.contains { TerminalText.isUnsafe($0) }
        }
        #expect {
            try settings.apply(fileText: "\u{1b}[31m\(String(repeating: "k", count: 1000)) = 1\n", path: "f")
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.message.utf8.count < 300 && error.message.contains("\\x1b[31mkkk") && error.message.contains("unknown setting")
        }
    }
}
