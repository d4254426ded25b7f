import ArgumentParser
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// `securotp policy`: which login methods a user or a group may use, in order
/// (docs/configuration.md, "Login methods"). Kept in the local store, where the module (local
/// mode) and a validator on this host read them; with `--database`, in PostgreSQL; with
/// `--server`, on the validator (`/v1/policies`).
struct Policy: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or set the login methods of a user or a group (@GROUP), in the order they are offered.",
        discussion: """
        Methods: fido (a security key), push (approval on a device, remote mode), otp (every passcode: TOTP, HOTP, SecurID, OCRA, recovery codes). The first that succeeds wins; one the user cannot use right now (no key attached, touch refused, push refused or unreachable) hands over to the next. A user's own policy comes first, then the policies of the user's groups (with several, only the methods all of them allow), then methods= in securotp.conf, then fido,push,otp.

        Policies are kept in the local store (read by the module in local mode and by a validator on this host), in PostgreSQL with --database URL, or on a validator with --server URL and an admin credential. A validator sends a user's order to hosts in remote mode and enforces it on every call; there a group's policy can only narrow the validator's methods=, never add to it, since the host names the groups.

        Examples:
          securotp policy alice --methods fido,otp
          securotp policy @contractors --methods otp
          securotp policy alice                 # shows alice's policy
          securotp policy alice --clear
          securotp policy                       # lists every policy
          securotp policy --server https://otp.example.com:8443 alice --methods otp
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "A user, or @GROUP; none lists every policy.") var subject: String?
    @Option(help: ArgumentHelp("Set the policy: methods in order, separated by commas, each once, from fido, push, otp (e.g. fido,otp). Without it or --clear, the policy is shown.",
                               valueName: "LIST")) var methods: String?
    @Flag(help: "Remove the policy: the groups' or the global methods apply again.") var clear = false

    func run(in context: CommandContext) async throws {
        if methods != nil && clear { throw CLIError.usage("--methods and --clear exclude each other") }
        let caller = context.caller
        guard let subject else {
            if methods != nil || clear { throw CLIError.usage("name a user or @GROUP") }
            let list = try await context.withService { service in try await service.methodPolicies(caller: caller) }
            for row in list.policies { context.print("\(row.subject) \(row.methods.joined(separator: ","))") }
            return
        }
        let key: String
        if subject.hasPrefix("@") {
            let group = String(subject.dropFirst())
            try Store.validate(user: group) // group names follow the same rules as user names
            key = Store.policySubject(group: group)
        } else {
            // This machine's NSS spelling (the one the module looks up), except with --server:
            // the validator's users need not be known here, so the name goes as given.
            key = context.isRemote ? subject : CommandContext.canonical(subject)
            try Store.validate(user: key)
        }
        if let methods {
            guard let order = LoginMethods(parsing: methods) else {
                throw CLIError.usage("--methods \(TerminalText.quoted(methods)): \(LoginMethods.expectation)")
            }
            let set = try await context.withService(create: true) { service in
                try await service.setMethodPolicy(subject: key, MethodPolicyRequest(methods: order.order.map(\.rawValue)), caller: caller)
            }
            context.print("\(set.subject) \(set.methods.joined(separator: ","))")
        } else if clear {
            let removed = try await context.withService { service -> Bool in
                do {
                    try await service.clearMethodPolicy(subject: key, caller: caller)
                    return true
                } catch let error as ServiceError where error.code == .notFound {
                    return false
                }
            }
            context.print(removed ? "Policy of \(key) removed." : "\(key) had no policy.")
        } else {
            let list = try await context.withService { service in try await service.methodPolicies(caller: caller) }
            if let row = list.policies.first(where: { $0.subject == key }) {
                context.print("\(key) \(row.methods.joined(separator: ","))")
            } else if case .local = context.target {
                context.print("\(key) has no policy (methods: \(context.settings.methods?.text ?? LoginMethods.standard.text) unless a group's applies)")
            } else {
                context.print("\(key) has no policy (the groups' or the validator's methods= apply)")
            }
        }
    }
}
