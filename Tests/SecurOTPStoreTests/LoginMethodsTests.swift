import Testing
@testable import SecurOTPStore

/// `methods` (docs/configuration.md, "Login methods"): the list's rules, the order of user,
/// group and global settings, and the policies kept in the store.
@Suite struct LoginMethodsTests {
    @Test("A list names known methods, each once, at least one", arguments: [
        ("fido,otp", [LoginMethod.fido, .otp]), ("otp", [.otp]), (" push , otp ", [.push, .otp]), ("otp,push,fido", [.otp, .push, .fido]),
    ])
    func parses(_ text: String, _ expected: [LoginMethod]) throws {
        let methods = try #require(LoginMethods(parsing: text))
        #expect(methods.order == expected)
        #expect(methods.explicit)
    }

    @Test("Unknown names, repeats, empty items and empty lists are refused", arguments: ["", ",", "otp,", "totp", "otp,otp", "fido,,otp", "OTP"])
    func refuses(_ text: String) {
        #expect(LoginMethods(parsing: text) == nil)
    }

    @Test("securotp.conf and module arguments take methods; a bad value names the key")
    func setting() throws {
        var settings = Settings()
        #expect(settings.methods == nil)
        try settings.apply(fileText: "methods = fido,otp\n", path: "/etc/securotp/securotp.conf")
        #expect(settings.methods?.order == [.fido, .otp])
        #expect(throws: StoreError(.config, "")) { try settings.apply(key: "methods", value: "sms", origin: .argument) }
        #expect(throws: StoreError(.config, "")) { try settings.apply(key: "methods", value: nil, origin: .argument) }
    }

    @Test("The user's policy wins; then the groups' (only what all of them allow); then the global one; then the standard order")
    func resolution() throws {
        let fidoOTP = try #require(LoginMethods(parsing: "fido,otp"))
        let otpPush = try #require(LoginMethods(parsing: "otp,push"))
        let pushOnly = try #require(LoginMethods(parsing: "push"))
        let fidoOnly = try #require(LoginMethods(parsing: "fido"))
        #expect(LoginMethods.resolve(user: fidoOnly, groups: [(name: "a", methods: otpPush)], global: fidoOTP) == fidoOnly)
        #expect(LoginMethods.resolve(user: nil, groups: [(name: "b", methods: otpPush), (name: "a", methods: fidoOTP)], global: nil)?.order == [.fido, .otp].filter { otpPush.allows($0) })
        #expect(LoginMethods.resolve(user: nil, groups: [(name: "a", methods: pushOnly), (name: "b", methods: fidoOnly)], global: nil) == nil,
                "nothing in common: no usable method")
        #expect(LoginMethods.resolve(user: nil, groups: [], global: otpPush) == otpPush)
        #expect(LoginMethods.resolve(user: nil, groups: [], global: nil) == .standard)
        #expect(LoginMethods.standard.order == [.fido, .push, .otp] && !LoginMethods.standard.explicit)
    }

    @Test("Policies round-trip through the store and feed the resolution")
    func storePolicies() throws {
        let temp = try TemporaryStore()
        let store = temp.store
        let global = try #require(LoginMethods(parsing: "otp"))
        #expect(try store.loginMethods(user: "alice", groups: { ["staff"] }, global: global) == global, "no policies: the global order")
        try store.setMethodPolicy("@staff", try #require(LoginMethods(parsing: "fido,otp")))
        #expect(try store.loginMethods(user: "alice", groups: { ["staff"] }, global: global)?.order == [.fido, .otp])
        #expect(try store.loginMethods(user: "bob", groups: { ["other"] }, global: global) == global)
        // Groups that cannot be read (NSS failing) fail the lookup: skipping them could only widen.
        #expect(throws: StoreError.self) {
            try store.loginMethods(user: "bob", groups: { () throws(StoreError) -> [String] in throw StoreError(.system, "NSS") }, global: global)
        }
        try store.setMethodPolicy("alice", try #require(LoginMethods(parsing: "push")))
        #expect(try store.loginMethods(user: "alice", groups: { ["staff"] }, global: global)?.order == [.push])
        try store.setMethodPolicy("alice", try #require(LoginMethods(parsing: "otp,fido")))
        #expect(try store.methodPolicy("alice")?.order == [.otp, .fido], "setting again replaces")
        #expect(try store.methodPolicies().map(\.subject) == ["@staff", "alice"])
        #expect(try store.clearMethodPolicy("alice"))
        #expect(try !store.clearMethodPolicy("alice"))
        #expect(try store.methodPolicy("alice") == nil)
        try store.db.execute("UPDATE method_policies SET methods = 'sms' WHERE subject = '@staff'")
        #expect(throws: StoreError.self, "an unreadable row fails closed") { try store.loginMethods(user: "alice", groups: { ["staff"] }, global: global) }
    }
}
