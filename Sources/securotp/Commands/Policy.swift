import ArgumentParser
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPStore

/// `securotp policy`: which login methods a user or a group may use, in order
/// (docs/configuration.md, "Login methods"). Kept in the local store, where the module (local
/// mode) and a validator on this host (remote mode, preflight) read them.
struct Policy: ContextCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or set the login methods of a user or a group (@GROUP), in the order they are offered.",
        discussion: """
        Methods: fido (a security key), push (approval on a device, remote mode), otp (every passcode: TOTP, HOTP, SecurID, OCRA, recovery codes). The first that succeeds wins; one the user cannot use right now (no key attached, touch refused, push refused or unreachable) hands over to the next. A user's own policy comes first, then the policies of the user's groups (with several, only the methods all of them allow), then methods= in securotp.conf, then fido,push,otp.

        Examples:
          securotp policy alice --methods fido,otp
          securotp policy @contractors --methods otp
          securotp policy alice                 # shows alice's policy
          securotp policy alice --clear
          securotp policy                       # lists every policy
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "A user, or @GROUP; none lists every policy.") var subject: String?
    @Option(help: "Methods in order, separated by commas: fido, push, otp.") var methods: String?
    @Flag(help: "Remove the policy: the groups' or the global methods apply again.") var clear = false

    func run(in context: CommandContext) async throws { try policy(in: context) }

    @inline(never)
    private func policy(in context: CommandContext) throws {
        guard case .local = context.target else {
            throw CLIError(.localStoreOnly, "method policies are kept in the local store only; run this on the host (or validator) without --server or --database")
        }
        if methods != nil && clear { throw CLIError.usage("--methods and --clear exclude each other") }
        guard let subject else {
            if methods != nil || clear { throw CLIError.usage("name a user or @GROUP") }
            let store = try Store.open(context.settings.paths, .migrate)
            for row in try store.methodPolicies() { context.print("\(row.subject) \(row.methods)") }
            return
        }
        let key: String
        if subject.hasPrefix("@") {
            let group = String(subject.dropFirst())
            try Store.validate(user: group) // group names follow the same rules as user names
            key = Store.policySubject(group: group)
        } else {
            key = CommandContext.canonical(subject)
            try Store.validate(user: key)
        }
        if let methods {
            guard let order = LoginMethods(parsing: methods) else {
                throw CLIError.usage("--methods \(TerminalText.quoted(methods)): \(LoginMethods.expectation)")
            }
            let store = try Store.open(context.settings.paths, .create)
            try store.setMethodPolicy(key, order)
            context.print("\(key) \(order.text)")
        } else if clear {
            let store = try Store.open(context.settings.paths, .migrate)
            context.print(try store.clearMethodPolicy(key) ? "Policy of \(key) removed." : "\(key) had no policy.")
        } else {
            let store = try Store.open(context.settings.paths, .migrate)
            if let order = try store.methodPolicy(key) {
                context.print("\(key) \(order.text)")
            } else {
                context.print("\(key) has no policy (methods: \(context.settings.methods?.text ?? LoginMethods.standard.text) unless a group's applies)")
            }
        }
    }
}
