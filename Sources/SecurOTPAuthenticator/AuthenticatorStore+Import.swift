import SecurOTPCore
import SecurOTPImport
import SecurOTPStore

extension AuthenticatorStore {
    /// Reads tokens in any format the admin CLI imports (TokenImporter) and adds them all, or
    /// none. Device-bound SecurID tokens must be bound to this store's binding ID. Throws the
    /// importer's `ImportError` for a refused source, `AuthenticatorError` otherwise.
    public func importTokens(from input: [UInt8], password: [UInt8]?, transportKey: SecretBytes?,
                             nickname: String?, now: Int64) throws -> [StoredToken] {
        let options = ImportOptions(password: password, transportKey: transportKey, bindingID: bindingID, now: now)
        let imported = try TokenImporter.parse(input, options: options)
        guard !imported.isEmpty else { throw AuthenticatorError(.invalidInput, "the source holds no tokens") }
        return try add(imported, nickname: nickname, now: now)
    }

    /// Adds tokens in one transaction: all of them or none. Refuses expired tokens, a serial
    /// already in the store, and parameters no code can be made from.
    public func add(_ imported: [ImportedToken], nickname: String?, now: Int64) throws(AuthenticatorError) -> [StoredToken] {
        if let nickname { try translating { () throws(StoreError) in try Store.validate(nickname: nickname) } }
        return try translating { () throws(StoreError) -> [StoredToken] in
            try db.immediateTransaction { () throws(StoreError) -> [StoredToken] in
                var added: [StoredToken] = []
                for token in imported {
                    let serial = if let given = token.serial { try unusedSerial(given) } else { try freshSerial() }
                    let stored = try Self.stored(token, serial: serial, nickname: nickname, now: now)
                    let sealed = try SeedSealing.seal(token.secret, key: keys.dataKey, user: sealingOwner, serial: serial)
                    try db.prepare("""
                        INSERT INTO tokens (serial, kind, algorithm, digits, period, counter, pin_mode, expires, nickname, issuer,
                                            account, source, created, sealed_seed)
                        VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
                        """)
                        .bind(.text(serial), .text(stored.kind.rawValue), .text(stored.algorithm.name), .integer(Int64(stored.digits)),
                              .integer(Int64(stored.period)), .integer(Int64(stored.counter)), .text(stored.pinMode.rawValue),
                              .integer(stored.expires), .text(stored.nickname), .text(stored.issuer), .text(stored.account),
                              .text(stored.source), .integer(now), .blob(sealed))
                        .run()
                    added.append(stored)
                }
                return added
            }
        }
    }

    /// The record for an imported token, or why it cannot be kept.
    static func stored(_ token: ImportedToken, serial: String, nickname: String?, now: Int64) throws(StoreError) -> StoredToken {
        let name = "token \(serial)"
        if let expires = token.expires, expires <= now {
            throw StoreError(.invalidInput, "\(name) expired on \(CalendarDate.text(expires)); ask its issuer for a new one")
        }
        // An account name that is not a valid nickname (too long, control characters) is cut or dropped.
        let account = token.account ?? ""
        var label = nickname ?? String(account.prefix(32))
        if nickname == nil, (try? Store.validate(nickname: label)) == nil { label = "" }
        var record = StoredToken(serial: serial, kind: .totp, algorithm: .sha1, digits: 6, period: 30, counter: 0,
                                 pinMode: token.pinMode, expires: token.expires ?? 0, nickname: label,
                                 issuer: token.issuer ?? "", account: account, source: token.source, created: now)
        switch token.kind {
        case .oath(let parameters):
            if let problem = parameters.problem { throw StoreError(.invalidInput, "\(name): \(problem)") }
            guard (10...128).contains(token.secret.count) else {
                throw StoreError(.invalidInput, "\(name): its secret is \(token.secret.count) bytes; securotp needs 10 to 128")
            }
            guard parameters.counter < 1 << 62 else { throw StoreError(.invalidInput, "\(name): HOTP counter \(parameters.counter) is too large") }
            record.kind = parameters.kind == .hotp ? .hotp : .totp
            record.algorithm = parameters.algorithm
            record.digits = parameters.digits
            record.period = parameters.kind == .hotp ? 0 : parameters.period
            record.counter = parameters.kind == .hotp ? parameters.counter : 0
        case .securID(let parameters):
            if let problem = parameters.problem { throw StoreError(.invalidInput, "\(name): \(problem)") }
            guard token.secret.count == 16 else { throw StoreError(.invalidInput, "\(name): a SecurID seed is 16 bytes") }
            guard serial.utf8.count <= 12, serial.utf8.allSatisfy({ (48...57).contains($0) }) else {
                throw StoreError(.invalidInput, "SecurID token \(serial): its serial is not 12 digits")
            }
            record.kind = .securid
            record.digits = parameters.digits
            record.period = parameters.interval
            if record.issuer.isEmpty { record.issuer = "RSA SecurID" }
        }
        return record
    }

    /// An issuer's serial, refused when a token already has it.
    private func unusedSerial(_ serial: String) throws(StoreError) -> String {
        guard !serial.isEmpty, serial.utf8.count <= 64, !serial.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7f }) else {
            throw StoreError(.invalidInput, "token serial \"\(serial)\" is not usable (1 to 64 printable characters)")
        }
        let check = try db.prepare("SELECT 1 FROM tokens WHERE serial = ?")
        defer { check.reset() }
        try check.bind(.text(serial))
        if try check.step() {
            throw StoreError(.invalidInput, "token \(serial) is already in this authenticator; to replace it, delete it first: securotp-authenticator delete \(serial)")
        }
        return serial
    }

    /// 10 random decimal digits, not starting with 0, unique in this store.
    private func freshSerial() throws(StoreError) -> String {
        for _ in 0..<16 {
            guard let random = SecretBytes.random(count: 8) else { throw StoreError(.system, "no randomness available") }
            let value = random.withUnsafeBytes { bytes in bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            let serial = String(1_000_000_000 + value % 9_000_000_000)
            let check = try db.prepare("SELECT 1 FROM tokens WHERE serial = ?")
            defer { check.reset() }
            try check.bind(.text(serial))
            if try !check.step() { return serial }
        }
        throw StoreError(.system, "could not find a free serial number")
    }
}
