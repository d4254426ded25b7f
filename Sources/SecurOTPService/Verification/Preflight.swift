import SecurOTPStore

/// What preflight tells a host, the same for every backend.
public enum Preflight {
    /// `has_tokens` counts every active token, expired or not, as the module's local mode does:
    /// with nullok, a user whose token expired is asked (and refused), never waved through.
    /// The code lengths are those of tokens that can still answer (OCRA's come with its suite).
    public static func codeDigits(_ active: [TokenRecord], now: Int64) -> [Int] {
        Array(Set(active.filter { $0.kind != .ocra && !$0.isExpired(at: now) }.map(\.parameters.digits))).sorted()
    }
}
