import Testing
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
}
