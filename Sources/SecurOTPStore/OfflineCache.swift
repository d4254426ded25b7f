import CPosix
import SecurOTPCore

/// A host's offline codes for one user (issue 4.6; docs/design.md, "Where a verification
/// goes"): slow, salted hashes of the user's coming HOTP codes that a validator handed this
/// host after an online login, what the host used of them while the validator was unreachable
/// (reported with the next online request), and the host's own failure count for offline logins.
///
/// On disk: one owner-only text file per user, written atomically, its last line an
/// HMAC-SHA256 over the rest under the host credential's hash (the same pepper the code hashes
/// use). A file copied to another host or user, edited, or left over from a revoked credential
/// fails the MAC and is ignored, so the host falls back to failmode.
public struct OfflineCache: Sendable, Equatable {
    public struct Code: Sendable, Equatable {
        public var serial: String
        public var digits: Int
        public var iterations: Int
        public var hash: OfflineCodeHash

        public init(serial: String, digits: Int, iterations: Int, hash: OfflineCodeHash) {
            self.serial = serial
            self.digits = digits
            self.iterations = iterations
            self.hash = hash
        }
    }

    /// Per token: the first counter value this host has not used offline.
    public struct Usage: Sendable, Equatable {
        public var serial: String
        public var nextUnused: Int64

        public init(serial: String, nextUnused: Int64) {
            self.serial = serial
            self.nextUnused = nextUnused
        }
    }

    public var codes: [Code] = []
    public var used: [Usage] = []
    /// Consecutive wrong offline codes, and until when offline logins are refused (0: not).
    public var failures = 0
    public var lockedUntil: Int64 = 0

    public init() {}

    /// Codes a validator hands one host per token at most (its limit), times a few tokens.
    public static let maxCodes = 400
    /// Iterations a host accepts per hash: enough for the validator's choice, bounded so a
    /// login never spends more than about a second hashing.
    public static let iterationRange = 1_000...200_000

    public var isEmpty: Bool { codes.isEmpty }

    public func isLocked(at now: Int64) -> Bool { lockedUntil != 0 && now < lockedUntil }

    /// The code `input` is, if any, as (serial, counter). Every code is hashed whatever the
    /// input, so timing tells nothing about which one matched. `codeAtEnd`: the code is the
    /// end of a longer answer (forward_pass).
    public func match(_ input: UnsafeBufferPointer<UInt8>, pepper: [UInt8], codeAtEnd: Bool) -> (serial: String, counter: Int64, digits: Int)? {
        var found: (serial: String, counter: Int64, digits: Int)?
        for code in codes {
            guard input.count >= code.digits, codeAtEnd || input.count == code.digits else { continue }
            let candidate = UnsafeBufferPointer(rebasing: input[(input.count - code.digits)...])
            if code.hash.matches(candidate, pepper: pepper, iterations: code.iterations), found == nil {
                found = (code.serial, code.hash.counter, code.digits)
            }
        }
        return found
    }

    /// After an offline acceptance: this code and every earlier one of its token are gone for
    /// good, and the validator will hear of it.
    public mutating func consume(serial: String, counter: Int64) {
        codes.removeAll { $0.serial == serial && $0.hash.counter <= counter }
        if let index = used.firstIndex(where: { $0.serial == serial }) {
            used[index].nextUnused = max(used[index].nextUnused, counter + 1)
        } else {
            used.append(Usage(serial: serial, nextUnused: counter + 1))
        }
        failures = 0
        lockedUntil = 0
    }

    /// A wrong offline code: counted, and after `deny` of them (0: never) offline logins stop
    /// for `unlockTime` seconds (0: until the validator is back and clears them). Only called
    /// while the cache is not locked. Returns whether this failure locked it.
    ///
    /// The one place that differs from Lockout.afterFailure, on purpose: a lock that ran out
    /// does not start the count again, so each wrong code after it locks again — one guess per
    /// `unlockTime` rather than `deny`. A host cut off from its validator is the attack offline
    /// codes meet, no validator counts then, and each guess is checked against every cached
    /// code. It stays a rate, and any online login clears it (`clearFailures`).
    public mutating func fail(now: Int64, deny: Int, unlockTime: Int64) -> Bool {
        failures = Lockout.oneMore(failures)
        let until = Lockout.lockedUntil(failures: failures, deny: deny, unlockTime: unlockTime, now: now)
        guard until != 0 else { return false }
        lockedUntil = until
        return true
    }

    /// What the validator said after an online verification: it withdrew the usage the host
    /// sent (`reported`), and on an accepted login it may send fresh codes. Codes below a
    /// token's `firstValid` are no longer reserved for this host and go.
    public mutating func absorb(reported: [Usage], refills: [Refill]) {
        used.removeAll { usage in reported.contains { $0.serial == usage.serial && $0.nextUnused >= usage.nextUnused } }
        for refill in refills {
            codes.removeAll { $0.serial == refill.serial && $0.hash.counter < refill.firstValid }
            for code in refill.codes where !codes.contains(where: { $0.serial == code.serial && $0.hash.counter == code.hash.counter }) {
                guard codes.count < Self.maxCodes else { break }
                codes.append(code)
            }
        }
    }

    /// An online login clears the offline failures: the validator has its own count.
    public mutating func clearFailures() {
        failures = 0
        lockedUntil = 0
    }

    /// One token's part of a verify answer's `offline` list.
    public struct Refill: Sendable, Equatable {
        public var serial: String
        public var firstValid: Int64
        public var codes: [Code]

        public init(serial: String, firstValid: Int64, codes: [Code]) {
            self.serial = serial
            self.firstValid = firstValid
            self.codes = codes
        }
    }

    /// Token serials as they may appear in the file: printable, no spaces, bounded.
    public static func isPlainSerial(_ serial: String) -> Bool {
        (1...64).contains(serial.utf8.count) && serial.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f }
    }
}

// MARK: - The file

extension OfflineCache {
    static let magic = "securotp-offline-cache 1"
    static let macDomain = Array("securotp-offline-cache-v1".utf8)
    public static let maxFileSize = 256 * 1024

    /// The file's text, MAC line included. `user` is bound into the MAC.
    public func serialized(user: String, pepper: [UInt8]) -> [UInt8] {
        var text = "\(Self.magic)\nuser \(Hex.encode(Array(user.utf8)))\nfailures \(failures) \(lockedUntil)\n"
        for usage in used { text += "used \(usage.serial) \(usage.nextUnused)\n" }
        for code in codes {
            text += "code \(code.serial) \(code.digits) \(code.iterations) \(code.hash.counter) \(Hex.encode(code.hash.salt)) \(Hex.encode(code.hash.hash))\n"
        }
        var bytes = Array(text.utf8)
        bytes += Array("mac \(Hex.encode(Self.mac(bytes, pepper: pepper)))\n".utf8)
        return bytes
    }

    private static func mac(_ body: [UInt8], pepper: [UInt8]) -> [UInt8] {
        HMAC.authenticate(.sha256, key: SecretBytes(copying: pepper), message: macDomain + body)
    }

    /// Parses a file written by `serialized` for the same user and pepper. Nil for anything
    /// else: a wrong MAC (other host, other user, edited, old credential) or a malformed line.
    public static func parse(_ bytes: [UInt8], user: String, pepper: [UInt8]) -> OfflineCache? {
        guard bytes.count <= maxFileSize, bytes.last == 0x0a else { return nil }
        // The MAC line is the last one; it covers every byte before it.
        var start = bytes.count - 1
        while start > 0, bytes[start - 1] != 0x0a { start -= 1 }
        let body = Array(bytes[..<start])
        let macLine = String(decoding: bytes[start..<(bytes.count - 1)], as: UTF8.self)
        guard macLine.hasPrefix("mac "), let stored = Hex.decode(String(macLine.dropFirst(4))), stored.count == 32,
              ConstantTime.equal(stored, mac(body, pepper: pepper)) else { return nil }

        var cache = OfflineCache()
        var sawUser = false
        for (index, line) in body.split(separator: 0x0a, omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
            if index == 0 {
                guard String(decoding: line, as: UTF8.self) == magic else { return nil }
                continue
            }
            if fields.isEmpty { continue }
            switch (fields[0], fields.count) {
            case ("user", 2):
                guard fields[1] == Hex.encode(Array(user.utf8)) else { return nil }
                sawUser = true
            case ("failures", 3):
                guard let failures = Int(fields[1]), failures >= 0, let until = Int64(fields[2]), until >= 0 else { return nil }
                cache.failures = failures
                cache.lockedUntil = until
            case ("used", 3):
                guard isPlainSerial(fields[1]), let next = Int64(fields[2]), next >= 0 else { return nil }
                cache.used.append(Usage(serial: fields[1], nextUnused: next))
            case ("code", 7):
                guard cache.codes.count < maxCodes, let code = Code(serial: fields[1], digits: fields[2], iterations: fields[3],
                                                                    counter: fields[4], salt: fields[5], hash: fields[6]) else { return nil }
                cache.codes.append(code)
            default:
                return nil
            }
        }
        return sawUser ? cache : nil
    }
}

extension OfflineCache.Code {
    /// One code from text fields (the file, or a validator's answer): every field checked.
    public init?(serial: String, digits: String, iterations: String, counter: String, salt: String, hash: String) {
        guard let digits = Int(digits), let iterations = Int(iterations), let counter = Int64(counter),
              let salt = Hex.decode(salt), let hash = Hex.decode(hash) else { return nil }
        self.init(serial: serial, digits: digits, iterations: iterations, counter: counter, salt: salt, hash: hash)
    }

    public init?(serial: String, digits: Int, iterations: Int, counter: Int64, salt: [UInt8], hash: [UInt8]) {
        guard OfflineCache.isPlainSerial(serial), (6...10).contains(digits), OfflineCache.iterationRange.contains(iterations),
              counter >= 0, salt.count == OfflineCodeHash.saltLength, hash.count == OfflineCodeHash.hashLength else { return nil }
        self.init(serial: serial, digits: digits, iterations: iterations, hash: OfflineCodeHash(counter: counter, salt: salt, hash: hash))
    }
}

/// Where a host keeps its offline caches: one file per user in an owner-only directory,
/// read and rewritten under an exclusive lock on the directory, so two logins of one user
/// never both accept one code.
public struct OfflineCacheDirectory {
    public let path: String

    public static let defaultPath = "/var/lib/securotp/offline"

    public init(_ settings: Settings) {
        if let configured = settings.remote.offlineCache {
            path = configured
        } else if let state = settings.paths.stateDirectory {
            path = state + "/offline"
        } else {
            path = Self.defaultPath
        }
    }

    /// The user's file: the name itself when it is plain, else a hash of it (names may hold
    /// any byte but '/' and ':', and be longer than a file name may be).
    public func file(for user: String) -> String {
        let plain = (1...64).contains(user.utf8.count) && user.utf8.first != UInt8(ascii: ".") && user.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
        if plain { return "\(path)/\(user).cache" }
        let digest = HMAC.authenticate(.sha256, key: SecretBytes(copying: Array("securotp-offline-name".utf8)), message: Array(user.utf8))
        return "\(path)/user-\(Hex.encode(digest.prefix(16))).cache"
    }

    /// Runs `body` holding the directory's lock. `create`: make the directory (0700) when it is
    /// missing; without it a missing directory means no cache (body gets nil).
    public func withLock<R>(create: Bool, _ body: (_ locked: Bool) throws(StoreError) -> R) throws(StoreError) -> R {
        if create {
            // /var/lib/securotp may not exist on a host that keeps no store of its own.
            if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                let parent = String(path[..<slash])
                var info = stat()
                if lstat(parent, &info) != 0, securotp_errno() == ENOENT { try FileSecurity.makePrivateDirectory(parent) }
            }
            try FileSecurity.makePrivateDirectory(path)
        } else {
            do throws(StoreError) {
                try FileSecurity.check(path, .secret, isDirectory: true)
            } catch where error.code == .missing {
                return try body(false)
            }
        }
        let fd = securotp_open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
        guard fd >= 0 else { throw StoreError(.system, "cannot open \(path): \(String(cString: strerror(securotp_errno())))") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard securotp_errno() == EINTR else { throw StoreError(.system, "cannot lock \(path): \(String(cString: strerror(securotp_errno())))") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body(true)
    }

    /// The user's cache; empty when there is none. A file that fails its MAC or does not parse
    /// is an error naming the file (the caller logs it and treats the cache as empty).
    public func load(user: String, pepper: [UInt8]) throws(StoreError) -> OfflineCache {
        let file = file(for: user)
        let bytes: [UInt8]
        do throws(StoreError) {
            bytes = try FileSecurity.contents(of: file, .secret, maxSize: OfflineCache.maxFileSize)
        } catch where error.code == .missing {
            return OfflineCache()
        }
        guard let cache = OfflineCache.parse(bytes, user: user, pepper: pepper) else {
            throw StoreError(.corrupt, """
                \(file) is not an offline cache for \(user) under this host's credential (copied, edited, \
                or made with an earlier credential); it is ignored and replaced at the next online login
                """)
        }
        return cache
    }

    /// Deletes the user's cache, whatever it holds (also a file that fails its MAC); true when
    /// there was one. Call it holding the lock (withLock).
    public func remove(user: String) throws(StoreError) -> Bool {
        let file = file(for: user)
        guard unlink(file) == 0 else {
            let code = securotp_errno()
            if code == ENOENT { return false }
            throw StoreError(.system, "cannot delete \(file): \(String(cString: strerror(code)))")
        }
        FileSecurity.syncDirectory(of: file)
        return true
    }

    /// Writes the user's cache durably (temp file, fsync, rename, fsync the directory); an
    /// empty cache without news for the validator removes the file.
    public func save(_ cache: OfflineCache, user: String, pepper: [UInt8]) throws(StoreError) {
        let file = file(for: user)
        if cache.isEmpty, cache.used.isEmpty, cache.failures == 0 {
            if unlink(file) == 0 { FileSecurity.syncDirectory(of: file) }
            return
        }
        try cache.serialized(user: user, pepper: pepper).withUnsafeBufferPointer { (bytes) throws(StoreError) in
            try FileSecurity.writeSecret(file, bytes: bytes, replace: true)
        }
    }
}
