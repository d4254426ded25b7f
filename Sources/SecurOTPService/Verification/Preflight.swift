import SecurOTPCore
import SecurOTPStore

/// What preflight tells a host, the same for every backend.
public enum Preflight {
    /// `has_tokens` counts every active token, expired or not, as the module's local mode does:
    /// with nullok, a user whose token expired is asked (and refused), never waved through.
    /// The code lengths are those of tokens that can still answer, as each kind tells them
    /// (`KindRules.promptDigits`: OCRA's come with its challenge).
    public static func codeDigits(_ active: [TokenRecord], now: Int64) -> [Int] {
        Array(Set(active.filter { !$0.isExpired(at: now) }.compactMap { $0.kind.promptDigits($0) })).sorted()
    }

    /// The OCRA challenge a preflight hands out for what `VerificationEngine.issueChallenge`
    /// decided, and the pending challenge to store with the engine's writes (none when locked:
    /// the host gets a throwaway challenge that looks the same, and the login fails as locked).
    /// The challenge is derived from the pending challenge's random id, so the id alone names it.
    public static func offer(_ issue: ChallengeIssue, user: String, host: String, now: Int64)
        throws(StoreError) -> (OCRAChallengeOffer, PendingChallenge?) {
        guard let id = PendingChallenge.freshID() else { throw StoreError(.system, "no randomness available") }
        let suite: OCRASuite
        var pending: PendingChallenge?
        switch issue {
        case .issued(let serial, let issuedSuite):
            suite = issuedSuite
            pending = PendingChallenge(id: id, user: user, host: host, kind: .ocraChallenge, serial: serial, position: 0, pinMode: .none,
                                       remaining: Dialogue.maxSteps, expires: now + ChallengeIssue.lifetime)
        case .locked(let lockedSuite):
            suite = lockedSuite
        }
        guard let challenge = ocraChallenge(id: id, suite: suite) else { throw StoreError(.system, "cannot derive an OCRA challenge") }
        return (OCRAChallengeOffer(id: id, challenge: challenge, digits: suite.digits), pending)
    }

    /// What a verification with `challenge_id` checks: the challenge text of the OCRA challenge
    /// `pending` (taken, so answered once) among the user's `tokens`, and whether its attempt
    /// was charged. An unknown, expired or foreign id gives no challenge and no charge.
    public static func ocraChallenge(_ pending: PendingChallenge?, tokens: [TokenRecord]) -> (challenge: String?, charged: Bool) {
        guard let pending, pending.kind == .ocraChallenge else { return (nil, false) }
        guard let record = tokens.first(where: { $0.serial == pending.serial }), let suite = try? OCRASuite(record.suite) else {
            return (nil, true)
        }
        return (ocraChallenge(id: pending.id, suite: suite), true)
    }

    private static func ocraChallenge(id: String, suite: OCRASuite) -> String? {
        suite.challenge(derivedFrom: SecretBytes(copying: Array(id.utf8)))
    }
}
