import SecurOTPCore

/// A token about to be added to the store, from `securotp enroll` or an import.
public struct NewToken {
    public var kind: TokenKind
    /// For SecurID: digits and period (interval) only.
    public var parameters: OATHParameters
    public var seed: SecretBytes
    /// The issuer's serial (SecurID, PSKC); nil: the store picks a random 10-digit one.
    public var serial: String?
    public var nickname: String
    public var issuer: String
    public var pinMode: PINMode
    /// Unix time after which the token is refused; 0: none.
    public var expires: Int64
    public var source: String
    /// OCRA suite (kind .ocra only).
    public var suite: String

    public init(kind: TokenKind, parameters: OATHParameters, seed: SecretBytes, serial: String? = nil, nickname: String = "",
                issuer: String = "", pinMode: PINMode = .none, expires: Int64 = 0, source: String = "enroll", suite: String = "") {
        self.suite = suite
        self.kind = kind
        self.parameters = parameters
        self.seed = seed
        self.serial = serial
        self.nickname = nickname
        self.issuer = issuer
        self.pinMode = pinMode
        self.expires = expires
        self.source = source
    }

    /// What is wrong with this token's parameters or secret, if anything: its kind's rules
    /// (`KindRules.problem(adding:)`).
    public var problem: String? { kind.problem(adding: self) }
}

extension NewToken {
    /// Everything about new tokens for `user` that needs no store: the user name, each
    /// nickname, parameters and secret, and expiry. Serials are checked when they are taken.
    public static func check(_ tokens: [NewToken], user: String, now: Int64) throws(StoreError) {
        try InputRules.validate(user: user)
        for token in tokens {
            try InputRules.validate(nickname: token.nickname)
            if let problem = token.problem { throw StoreError(.invalidInput, problem) }
            if token.expires > 0, token.expires <= now {
                throw StoreError(.invalidInput, "token \(token.serial ?? "") expired on \(token.expires) (Unix time); ask its issuer for a new one")
            }
        }
    }

    /// The record of this token once stored under `serial` for `user`: active, never used.
    public func record(serial: String, user: String, created: Int64) -> TokenRecord {
        var record = TokenRecord(serial: serial, user: user, kind: kind, parameters: parameters, lastStep: -1,
                                 nickname: nickname, issuer: issuer, state: TokenRecord.active, created: created, lastUsed: 0)
        record.pinMode = pinMode
        record.expires = expires
        record.source = source
        record.suite = suite
        return record
    }
}
