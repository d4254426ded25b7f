import Foundation
@testable import securotp
import SecurOTPService
import SecurOTPStore
import Testing

/// `securotp policy` through the TokenService (the local store here; `--database` and
/// `--server` run the same calls: MethodPolicyAdminAPITests, RemoteMethodEnforcementTests).
@Suite("securotp policy in-process")
struct PolicyCommandTests {
    @Test("policy sets, shows, lists and clears users' and groups' methods through the service, audited")
    func throughTheService() async throws {
        let world = try CommandTests.world()
        defer { try? FileManager.default.removeItem(atPath: world.directory) }
        let context = world.context
        try await Policy.parse(["nosuchuser-x", "--methods", "fido,otp"]).run(in: context)
        #expect(world.printed.take() == "nosuchuser-x fido,otp\n")
        try await Policy.parse(["@contractors", "--methods", "otp"]).run(in: context)
        #expect(world.printed.take() == "@contractors otp\n")
        try await Policy.parse([]).run(in: context)
        #expect(world.printed.take() == "@contractors otp\nnosuchuser-x fido,otp\n")
        try await Policy.parse(["nosuchuser-x"]).run(in: context)
        #expect(world.printed.take() == "nosuchuser-x fido,otp\n")
        let methods = try await world.service.loginMethods(user: "nosuchuser-x", caller: .local("test"))
        #expect(methods?.text == "fido,otp", "the service enforces what the command set")

        try await Policy.parse(["nosuchuser-x", "--clear"]).run(in: context)
        #expect(world.printed.take() == "Policy of nosuchuser-x removed.\n")
        try await Policy.parse(["nosuchuser-x", "--clear"]).run(in: context)
        #expect(world.printed.take() == "nosuchuser-x had no policy.\n")
        try await Policy.parse(["nosuchuser-x"]).run(in: context)
        #expect(world.printed.take().hasPrefix("nosuchuser-x has no policy"))
        let audit = try await world.service.audit(user: "nosuchuser-x", limit: 10, caller: .local("test"))
        #expect(audit.entries.map(\.action) == ["policy clear", "policy set"], "\(audit.entries)")

        await #expect(throws: (any Error).self) { try await Policy.parse(["alice", "--methods", "fido,fido"]).run(in: context) }
    }
}
