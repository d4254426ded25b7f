import SecurOTPCore

/// HOTP codes a validator hands to one host for logins while the validator is unreachable
/// (docs/design.md, "Where a verification goes"). The host gets slow, salted, host-keyed
/// hashes of the token's coming codes — never the seed — and the validator reserves those counter values for that host: the token's
/// counter moves past them, so no other host can accept them, and only that host (online or
/// off) can. A used offline code is reported with the host's next online request and
/// withdrawn before anything else is checked, so each reserved code is accepted once.
///
/// Only HOTP tokens without a PIN qualify: a time-based code cannot be reserved ahead without
/// reserving a whole period of them, and a PIN would have to be hashed into every code.
public struct OfflineReservation: Sendable, Equatable {
    public var serial: String
    /// The counter values [first, last] the host may accept (empty when first > last).
    public var first: Int64
    public var last: Int64

    public init(serial: String, first: Int64, last: Int64) {
        self.serial = serial
        self.first = first
        self.last = last
    }
}

/// One hashed code for a host's cache.
public struct OfflineCodeHash: Sendable, Equatable {
    public var counter: Int64
    public var salt: [UInt8]
    public var hash: [UInt8]

    public init(counter: Int64, salt: [UInt8], hash: [UInt8]) {
        self.counter = counter
        self.salt = salt
        self.hash = hash
    }

    public static let saltLength = 16
    public static let hashLength = 32
    public static let iterationRange = 1_000...1_000_000

    /// PBKDF2-HMAC-SHA256 over the code, salted with `salt` followed by the host's `pepper`
    /// (the hash of its credential: a cache file without the credential cannot be searched).
    public static func derive(code: UnsafeBufferPointer<UInt8>, salt: [UInt8], pepper: [UInt8], iterations: Int) -> [UInt8]? {
        guard iterationRange.contains(iterations) else { return nil }
        return SlowHash.pbkdf2SHA256(password: code, salt: salt + pepper, iterations: iterations, length: hashLength)?
            .withUnsafeBytes { Array($0) }
    }

    /// Whether `code` is the code this hash was made from (constant-time comparison).
    public func matches(_ code: UnsafeBufferPointer<UInt8>, pepper: [UInt8], iterations: Int) -> Bool {
        guard hash.count == Self.hashLength, let derived = Self.derive(code: code, salt: salt, pepper: pepper, iterations: iterations) else {
            return false
        }
        return ConstantTime.equal(derived, hash)
    }
}

extension VerificationEngine {
    /// Tokens whose codes may be reserved for hosts.
    public static func offlineEligible(_ record: TokenRecord) -> Bool {
        record.kind.hasOfflineCodes && record.pinMode == .none && record.isActive
    }

    /// The first reserved position whose code `input` is, on an eligible, unexpired token of
    /// `tokens`; nil when none is. Every reserved position is tried (a wrong code costs them
    /// all, whatever its value).
    public func matchReserved(_ tokens: [TokenSnapshot], _ reservations: [OfflineReservation], input: UnsafeBufferPointer<UInt8>,
                              now: Int64) throws(StoreError) -> (record: TokenRecord, position: Int64)? {
        var found: (record: TokenRecord, position: Int64)?
        for reservation in reservations where reservation.first <= reservation.last {
            guard let token = tokens.first(where: { $0.record.serial == reservation.serial }),
                  Self.offlineEligible(token.record), !token.record.isExpired(at: now) else { continue }
            let seed = try openSeed(token.sealedSeed, token.record)
            // A reservation never spans more than the host's limit (at most 100 codes).
            let upper = reservation.first > Int64.max - 100 ? reservation.first : min(reservation.last, reservation.first + 100)
            for position in reservation.first...upper {
                let code = OTP.hotp(secret: seed, counter: UInt64(max(0, position)), digits: token.record.parameters.digits,
                                    algorithm: token.record.parameters.algorithm)
                if code.withUnsafeBufferPointer({ ConstantTime.equal($0, input) }), found == nil {
                    found = (token.record, position)
                }
            }
        }
        return found
    }

    /// Hashes of the codes at `positions` of an eligible token, for one host.
    public func offlineHashes(_ token: TokenSnapshot, positions: ClosedRange<Int64>, pepper: [UInt8],
                              iterations: Int) throws(StoreError) -> [OfflineCodeHash] {
        guard Self.offlineEligible(token.record) else { return [] }
        let seed = try openSeed(token.sealedSeed, token.record)
        var hashes: [OfflineCodeHash] = []
        for position in positions where position >= 0 {
            let code = OTP.hotp(secret: seed, counter: UInt64(position), digits: token.record.parameters.digits,
                                algorithm: token.record.parameters.algorithm)
            guard let salt = SecretBytes.random(count: OfflineCodeHash.saltLength)?.withUnsafeBytes({ Array($0) }),
                  let hash = code.withUnsafeBufferPointer({ OfflineCodeHash.derive(code: $0, salt: salt, pepper: pepper, iterations: iterations) })
            else { throw StoreError(.system, "no randomness available for offline code salts") }
            hashes.append(OfflineCodeHash(counter: position, salt: salt, hash: hash))
        }
        return hashes
    }
}

/// What a validator does after a host's accepted online login on an eligible token, so that
/// the host again holds `count` codes ahead: the host's reservation, the positions to hash
/// and send (those the host does not have yet), and the token counter other hosts then start at.
public struct OfflineRefill: Sendable, Equatable {
    public var reservation: OfflineReservation
    public var newPositions: ClosedRange<Int64>?
    public var counter: Int64

    public init(reservation: OfflineReservation, newPositions: ClosedRange<Int64>?, counter: Int64) {
        self.reservation = reservation
        self.newPositions = newPositions
        self.counter = counter
    }

    /// `accepted`: the position just accepted; `previous`: the host's reservation for the
    /// token before this login (nil: none); `counter`: the token's counter now (after an
    /// acceptance by the engine it is `accepted + 1`).
    public static func plan(accepted: Int64, previous: OfflineReservation?, counter: Int64, count: Int, serial: String) -> OfflineRefill? {
        guard count > 0, accepted < Int64.max / 2 else { return nil }
        let first = accepted + 1
        let wanted = first + Int64(count) - 1
        // Codes the host still holds: those of its reservation after the accepted one.
        let heldUpTo = previous.map { $0.last >= first ? $0.last : first - 1 } ?? (first - 1)
        let last = max(heldUpTo, wanted)
        let newPositions: ClosedRange<Int64>? = heldUpTo + 1 <= last ? (heldUpTo + 1)...last : nil
        return OfflineRefill(reservation: OfflineReservation(serial: serial, first: first, last: last), newPositions: newPositions,
                             counter: max(counter, last + 1))
    }
}
