import Foundation
import SecurOTPCore
import SecurOTPStore
import Testing

@Suite("OfflineCache: a host's offline codes, its file format and MAC")
struct OfflineCacheTests {
    static let pepper = Array(repeating: UInt8(7), count: 32)
    static let iterations = 1_000

    /// A cache holding hashes of `codes` (counter → code) for one token.
    static func cache(_ codes: [(Int64, String)], serial: String = "S1") throws -> OfflineCache {
        var cache = OfflineCache()
        for (counter, code) in codes {
            let salt = Array(repeating: UInt8(counter & 0xff), count: OfflineCodeHash.saltLength)
            let hash = try #require(Array(code.utf8).withUnsafeBufferPointer {
                OfflineCodeHash.derive(code: $0, salt: salt, pepper: pepper, iterations: iterations)
            })
            cache.codes.append(try #require(OfflineCache.Code(serial: serial, digits: code.count, iterations: iterations, counter: counter,
                                                              salt: salt, hash: hash)))
        }
        return cache
    }

    static func match(_ cache: OfflineCache, _ input: String, codeAtEnd: Bool = false) -> (serial: String, counter: Int64, digits: Int)? {
        Array(input.utf8).withUnsafeBufferPointer { cache.match($0, pepper: pepper, codeAtEnd: codeAtEnd) }
    }

    @Test("A code matches its own hash only, whole or at the end of a forward_pass answer")
    func matching() throws {
        let cache = try Self.cache([(5, "111111"), (6, "222222")])
        #expect(Self.match(cache, "222222")?.counter == 6)
        #expect(Self.match(cache, "333333") == nil)
        #expect(Self.match(cache, "1111111") == nil, "a longer answer is not a code without codeAtEnd")
        #expect(Self.match(cache, "hunter2111111", codeAtEnd: true)?.counter == 5)
        let otherPepper = Array("222222".utf8).withUnsafeBufferPointer { cache.match($0, pepper: Array(repeating: 8, count: 32), codeAtEnd: false) }
        #expect(otherPepper == nil, "the hashes are keyed by the host credential")
    }

    @Test("consume drops the code and every earlier one of its token and records the next unused counter")
    func consume() throws {
        var cache = try Self.cache([(5, "111111"), (6, "222222"), (7, "333333")]).merging(try Self.cache([(1, "444444")], serial: "S2"))
        cache.failures = 2
        cache.consume(serial: "S1", counter: 6)
        #expect(cache.codes.map { $0.hash.counter } == [7, 1])
        #expect(cache.used == [OfflineCache.Usage(serial: "S1", nextUnused: 7)])
        #expect(cache.failures == 0)
        #expect(Self.match(cache, "111111") == nil && Self.match(cache, "222222") == nil)
        cache.consume(serial: "S1", counter: 7)
        #expect(cache.used == [OfflineCache.Usage(serial: "S1", nextUnused: 8)])
    }

    @Test("absorb: reported usage is cleared unless used again since; codes below first_valid go; new codes join once")
    func absorb() throws {
        var cache = try Self.cache([(5, "111111"), (6, "222222")])
        cache.used = [OfflineCache.Usage(serial: "S1", nextUnused: 5), OfflineCache.Usage(serial: "S2", nextUnused: 9)]
        let refill = OfflineCache.Refill(serial: "S1", firstValid: 6, codes: try Self.cache([(6, "222222"), (7, "333333")]).codes)
        cache.absorb(reported: [OfflineCache.Usage(serial: "S1", nextUnused: 5), OfflineCache.Usage(serial: "S2", nextUnused: 8)], refills: [refill])
        #expect(cache.codes.map { $0.hash.counter } == [6, 7])
        #expect(cache.used == [OfflineCache.Usage(serial: "S2", nextUnused: 9)], "S2 was used further after the report was sent")
    }

    @Test("deny failures lock the cache for unlock_time; 0 locks until an online login clears it")
    func locking() throws {
        var cache = OfflineCache()
        let first = cache.fail(now: 100, deny: 2, unlockTime: 60)
        let second = cache.fail(now: 100, deny: 2, unlockTime: 60)
        #expect(!first && second)
        #expect(cache.isLocked(at: 159) && !cache.isLocked(at: 160))
        var forever = OfflineCache()
        _ = forever.fail(now: 100, deny: 1, unlockTime: 0)
        #expect(forever.isLocked(at: Int64.max - 1))
        forever.clearFailures()
        var never = OfflineCache()
        let lockedByDenyZero = never.fail(now: 100, deny: 0, unlockTime: 60)
        #expect(!lockedByDenyZero && !never.isLocked(at: 100) && never.failures == 1, "deny=0 never locks")
        #expect(!forever.isLocked(at: 200) && forever.failures == 0)
        // After a lock ran out, each wrong code locks again: one guess per unlock_time while the
        // host is cut off (unlike Lockout.afterFailure's count that starts again; OfflineCache.fail).
        let afterLock = cache.fail(now: 160, deny: 2, unlockTime: 60)
        #expect(afterLock && cache.isLocked(at: 219) && !cache.isLocked(at: 220))
    }

    @Test("The file round-trips; any edited byte, another user or another credential makes it unreadable")
    func fileFormat() throws {
        var cache = try Self.cache([(5, "111111"), (6, "222222")])
        cache.used = [OfflineCache.Usage(serial: "S1", nextUnused: 5)]
        cache.failures = 1
        cache.lockedUntil = 0
        let bytes = cache.serialized(user: "alice", pepper: Self.pepper)
        #expect(OfflineCache.parse(bytes, user: "alice", pepper: Self.pepper) == cache)
        #expect(OfflineCache.parse(bytes, user: "bob", pepper: Self.pepper) == nil)
        #expect(OfflineCache.parse(bytes, user: "alice", pepper: Array(repeating: 9, count: 32)) == nil)
        for index in stride(from: 0, to: bytes.count - 1, by: 7) where bytes[index] != 0x0a {
            var edited = bytes
            edited[index] ^= 0x01
            #expect(OfflineCache.parse(edited, user: "alice", pepper: Self.pepper) == nil, "byte \(index) changed")
        }
        #expect(OfflineCache.parse(Array(bytes.dropLast(3)), user: "alice", pepper: Self.pepper) == nil)
        #expect(OfflineCache.parse([], user: "alice", pepper: Self.pepper) == nil)
    }

    @Test("Codes from a validator are checked field by field")
    func codeValidation() {
        let salt = Array(repeating: UInt8(1), count: 16)
        let hash = Array(repeating: UInt8(2), count: 32)
        #expect(OfflineCache.Code(serial: "S", digits: 6, iterations: 20_000, counter: 1, salt: salt, hash: hash) != nil)
        #expect(OfflineCache.Code(serial: "S", digits: 5, iterations: 20_000, counter: 1, salt: salt, hash: hash) == nil)
        #expect(OfflineCache.Code(serial: "S", digits: 6, iterations: 10_000_000, counter: 1, salt: salt, hash: hash) == nil, "bounded work per login")
        #expect(OfflineCache.Code(serial: "S", digits: 6, iterations: 20_000, counter: -1, salt: salt, hash: hash) == nil)
        #expect(OfflineCache.Code(serial: "a b", digits: 6, iterations: 20_000, counter: 1, salt: salt, hash: hash) == nil, "no spaces in the file's fields")
        #expect(OfflineCache.Code(serial: "S", digits: 6, iterations: 20_000, counter: 1, salt: [1], hash: hash) == nil)
    }

    @Test("The directory: owner-only, one file per user (hashed names for unusual ones), saved and loaded under its lock")
    func directory() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("offline-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        var settings = Settings()
        settings.remote.offlineCache = root + "/cache"
        let caches = OfflineCacheDirectory(settings)
        #expect(caches.file(for: "alice") == root + "/cache/alice.cache")
        #expect(caches.file(for: "..").hasPrefix(root + "/cache/user-"))
        #expect(caches.file(for: "dom\\user").hasPrefix(root + "/cache/user-"))
        #expect(caches.file(for: "dom\\user") != caches.file(for: "dom\\user2"))

        let missing = try caches.withLock(create: false) { (exists) throws(StoreError) in exists }
        #expect(!missing, "no directory, no cache, nothing created")
        #expect(!FileManager.default.fileExists(atPath: root + "/cache"))

        let cache = try Self.cache([(1, "123456")])
        try caches.withLock(create: true) { (_) throws(StoreError) in try caches.save(cache, user: "alice", pepper: Self.pepper) }
        let attributes = try FileManager.default.attributesOfItem(atPath: caches.file(for: "alice"))
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o077 } == 0)
        #expect(try caches.load(user: "alice", pepper: Self.pepper) == cache)
        #expect(try caches.load(user: "bob", pepper: Self.pepper) == OfflineCache())
        #expect(throws: StoreError.self) { try caches.load(user: "alice", pepper: Array(repeating: 0, count: 32)) }

        chmod(caches.file(for: "alice"), 0o644)
        #expect(throws: StoreError.self, "a readable cache is refused") { try caches.load(user: "alice", pepper: Self.pepper) }
        chmod(caches.file(for: "alice"), 0o600)
        try caches.save(OfflineCache(), user: "alice", pepper: Self.pepper)
        #expect(!FileManager.default.fileExists(atPath: caches.file(for: "alice")), "an empty cache leaves no file")
    }
}

extension OfflineCache {
    func merging(_ other: OfflineCache) -> OfflineCache {
        var merged = self
        merged.codes += other.codes
        return merged
    }
}
