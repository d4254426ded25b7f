/// A way to prove the second factor (docs/configuration.md, "Login methods").
public enum LoginMethod: String, Sendable, Equatable, CaseIterable {
    /// A FIDO security key (local mode, docs/fido.md).
    case fido
    /// Approval on a device (remote mode, docs/push.md).
    case push
    /// Every passcode: TOTP, HOTP, SecurID, OCRA, recovery codes, offline codes.
    case otp
}

/// Which methods a user may use and in which order they are offered (`methods = fido,otp`
/// in securotp.conf, per group and per user with `securotp policy`). The first method that
/// succeeds wins; one the user cannot use right now (no key attached, touch refused, push
/// refused or unreachable) hands over to the next.
public struct LoginMethods: Sendable, Equatable {
    public let order: [LoginMethod]
    /// Set by an admin (a setting or a policy), not `standard`: only then does a refused
    /// touch of a security key hand over to the next method; without a setting a refused
    /// touch fails the login, as it did before methods existed.
    public let explicit: Bool

    /// Today's order when nothing is set: a FIDO key first (local mode), then the prompt
    /// that offers push (remote mode) together with passcodes.
    public static let standard = LoginMethods(checked: [.fido, .push, .otp], explicit: false)

    private init(checked order: [LoginMethod], explicit: Bool) {
        self.order = order
        self.explicit = explicit
    }

    /// `fido,push,otp`: known names, each at most once, at least one. Nil otherwise.
    public init?(parsing text: String) {
        var order: [LoginMethod] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let method = LoginMethod(rawValue: item.trimmingSpaces), !order.contains(method) else { return nil }
            order.append(method)
        }
        guard !order.isEmpty else { return nil }
        self.order = order
        explicit = true
    }

    public var text: String { order.map { $0.rawValue }.joined(separator: ",") }

    public func allows(_ method: LoginMethod) -> Bool { order.contains(method) }

    /// The methods both allow, in this order; nil when none is left.
    public func intersected(with other: LoginMethods) -> LoginMethods? {
        let kept = order.filter { other.allows($0) }
        return kept.isEmpty ? nil : LoginMethods(checked: kept, explicit: explicit || other.explicit)
    }

    /// The methods `keep` lets through, in this order; nil when none is left.
    public func keeping(_ keep: (LoginMethod) -> Bool) -> LoginMethods? {
        let kept = order.filter(keep)
        return kept.isEmpty ? nil : LoginMethods(checked: kept, explicit: explicit)
    }

    /// Remote mode: what a validator's order (`offered`, from its policies) leaves of this
    /// host's methods. The validator may only narrow: a method the host does not allow is never
    /// offered, whatever the validator says. The order is this host's when an admin set one here
    /// (`methods=`), else the validator's. Nil when they have no method in common.
    public func bounding(_ offered: LoginMethods) -> LoginMethods? {
        explicit ? intersected(with: offered) : offered.intersected(with: self)
    }

    /// What `value` expects, for error messages.
    public static let expectation = "expected methods from fido, push, otp separated by commas, each once"

    /// The order for `user` in group `groups`: the user's own policy, else the groups'
    /// (a user in several groups with a policy gets only the methods all of them allow, in
    /// the order of the first group by name), else `global`, else `standard`. Nil: the
    /// groups' policies leave no method in common (the user has no usable method).
    public static func resolve(user: LoginMethods?, groups: [(name: String, methods: LoginMethods)], global: LoginMethods?) -> LoginMethods? {
        if let user { return user }
        let sorted = groups.sorted { $0.name < $1.name }
        if var combined = sorted.first?.methods {
            for group in sorted.dropFirst() {
                guard let kept = combined.intersected(with: group.methods) else { return nil }
                combined = kept
            }
            return combined
        }
        return global ?? standard
    }
}
