import Foundation
import Testing
@testable import SecurOTPCore
@testable import SecurOTPEngine
@testable import SecurOTPStore

/// A private state directory per test, removed afterwards.
final class TemporaryStore {
    let directory: String
    let store: Store

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("securotp-\(UUID().uuidString)").path
        store = try Store.open(StorePaths(stateDirectory: directory), .create)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    var paths: StorePaths { StorePaths(stateDirectory: directory) }
}

func code(_ seed: SecretBytes, counter: UInt64, digits: Int = 6, algorithm: HashAlgorithm = .sha1) -> [UInt8] {
    OTP.hotp(secret: seed, counter: counter, digits: digits, algorithm: algorithm)
}

extension Store {
    func verify(_ user: String, _ input: [UInt8], policy: VerifyPolicy = VerifyPolicy(), now: Int64, codeAtEnd: Bool = false) throws -> VerifyResult {
        try input.withUnsafeBufferPointer { try verify(user: user, input: $0, codeAtEnd: codeAtEnd, policy: policy, now: now) }
    }
}

@Suite struct VerifyTests {
    let t0: Int64 = 1_800_000_000 // a fixed clock: TOTP steps are 60_000_000 at period 30

    @Test func totpWindowAndExactlyOnce() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 20))
        let token = try temp.store.enroll(user: "alice", parameters: OATHParameters(kind: .totp), seed: seed,
                                          nickname: "", issuer: "", maxTokens: 10, now: t0)
        let step = UInt64(t0 / 30)
        // One step behind is inside window 1 ...
        #expect(try temp.store.verify("alice", code(seed, counter: step - 1), now: t0).outcome == .accepted(serial: token.serial, digits: 6))
        // ... the same code again is a replay, and so is anything at or before the accepted step.
        #expect(try temp.store.verify("alice", code(seed, counter: step - 1), now: t0).outcome == .replayed(serial: token.serial))
        #expect(try temp.store.verify("alice", code(seed, counter: step), now: t0).outcome == .accepted(serial: token.serial, digits: 6))
        #expect(try temp.store.verify("alice", code(seed, counter: step), now: t0 + 1).outcome == .replayed(serial: token.serial))
        // Three steps away is outside the window: rejected without resync, else the next code is asked for.
        var strict = VerifyPolicy()
        strict.resyncWindow = 0
        #expect(try temp.store.verify("alice", code(seed, counter: step + 3), policy: strict, now: t0).outcome == .rejected)
        #expect(try temp.store.verify("alice", code(seed, counter: step + 3), now: t0).outcome == .nextCodeRequired(serial: token.serial, position: Int64(step + 3)))
        var wide = VerifyPolicy()
        wide.window = 3
        #expect(try temp.store.verify("alice", code(seed, counter: step + 3), policy: wide, now: t0).outcome == .accepted(serial: token.serial, digits: 6))
        // The acceptance is durable: a fresh connection sees it.
        let reopened = try Store.open(temp.paths, .asIs)
        #expect(try reopened.verify("alice", code(seed, counter: step + 3), policy: wide, now: t0).outcome == .replayed(serial: token.serial))
        #expect(try reopened.tokens(user: "alice").first?.lastUsed == t0)
    }

    @Test func hotpLookaheadMovesTheCounter() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 32))
        let parameters = OATHParameters(kind: .hotp, algorithm: .sha256, digits: 8)
        let token = try temp.store.enroll(user: "bob", parameters: parameters, seed: seed, nickname: "", issuer: "", maxTokens: 10, now: t0)
        let accepted = VerifyOutcome.accepted(serial: token.serial, digits: 8)
        #expect(try temp.store.verify("bob", code(seed, counter: 4, digits: 8, algorithm: .sha256), now: t0).outcome == accepted)
        #expect(try temp.store.tokens(user: "bob").first?.parameters.counter == 5)
        #expect(try temp.store.verify("bob", code(seed, counter: 2, digits: 8, algorithm: .sha256), now: t0).outcome == .replayed(serial: token.serial))
        #expect(try temp.store.verify("bob", code(seed, counter: 5 + 11, digits: 8, algorithm: .sha256), now: t0).outcome == .nextCodeRequired(serial: token.serial, position: 16))
        #expect(try temp.store.verify("bob", code(seed, counter: 5 + 10, digits: 8, algorithm: .sha256), now: t0).outcome == accepted)
        // A 6-digit answer never matches an 8-digit token.
        #expect(try temp.store.verify("bob", Array(code(seed, counter: 16, digits: 8, algorithm: .sha256).suffix(6)), now: t0).outcome == .rejected)
    }

    @Test func lockoutAfterDenyFailuresAndExpiry() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 20))
        _ = try temp.store.enroll(user: "carol", parameters: OATHParameters(kind: .hotp), seed: seed, nickname: "", issuer: "", maxTokens: 10, now: t0)
        var policy = VerifyPolicy()
        policy.deny = 3
        policy.unlockTime = 60
        // Not any code of the look-ahead or the resync range, which would start a dialogue.
        let near = Set((0..<80).map { code(seed, counter: UInt64($0)) })
        let wrong = try #require([Array("000000".utf8), Array("111111".utf8), Array("222222".utf8)].first { !near.contains($0) })
        #expect(try temp.store.verify("carol", wrong, policy: policy, now: t0).failures == 1)
        #expect(try temp.store.verify("carol", wrong, policy: policy, now: t0).lockedNow == false)
        let third = try temp.store.verify("carol", wrong, policy: policy, now: t0)
        #expect(third.lockedNow && third.failures == 3)
        // While locked even the right code is refused and not consumed.
        #expect(try temp.store.verify("carol", code(seed, counter: 0), policy: policy, now: t0 + 59).outcome == .locked)
        #expect(try temp.store.tokens(user: "carol").first?.parameters.counter == 0)
        // After unlock_time the lock lapses and the code works.
        #expect(try temp.store.verify("carol", code(seed, counter: 0), policy: policy, now: t0 + 60).outcome != .locked)
        #expect(try temp.store.userState("carol") == UserState(failures: 0, lockedUntil: 0))
    }

    @Test func adminUnlockLiftsAPermanentLock() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 20))
        _ = try temp.store.enroll(user: "dave", parameters: OATHParameters(kind: .hotp), seed: seed, nickname: "", issuer: "", maxTokens: 10, now: t0)
        var policy = VerifyPolicy()
        policy.deny = 1
        policy.unlockTime = 0
        _ = try temp.store.verify("dave", Array("12345x".utf8), policy: policy, now: t0)
        #expect(try temp.store.verify("dave", code(seed, counter: 0), policy: policy, now: t0 + 1_000_000).outcome == .locked)
        #expect(try temp.store.lockedUsers(now: t0) == ["dave"])
        #expect(try temp.store.unlock(user: "dave", now: t0))
        #expect(try temp.store.verify("dave", code(seed, counter: 0), policy: policy, now: t0).outcome != .locked)
    }

    @Test func unknownUsersAreCountedLikeOthers() throws {
        let temp = try TemporaryStore()
        let result = try temp.store.verify("nobody-here", Array("123456".utf8), now: t0)
        #expect(result.outcome == .rejected)
        #expect(!result.userHasTokens)
        #expect(result.failures == 1)
    }

    @Test func passwordAndCodeInOneAnswer() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 20))
        let token = try temp.store.enroll(user: "erin", parameters: OATHParameters(kind: .hotp, digits: 7), seed: seed, nickname: "", issuer: "", maxTokens: 10, now: t0)
        let input = Array("s3cret pass".utf8) + code(seed, counter: 0, digits: 7)
        #expect(try temp.store.verify("erin", input, now: t0, codeAtEnd: true).outcome == .accepted(serial: token.serial, digits: 7))
        #expect(try temp.store.verify("erin", Array("pw".utf8) + code(seed, counter: 1, digits: 7), now: t0).outcome == .rejected)
    }
}

@Suite struct SealingTests {
    @Test func associatedDataBindsUserAndSerial() throws {
        let key = try #require(SecretBytes.random(count: 32))
        let seed = try #require(SecretBytes.random(count: 20))
        let sealed = try SeedSealing.seal(seed, key: key, user: "alice", serial: "1000000001")
        #expect(SeedSealing.open(sealed, key: key, user: "alice", serial: "1000000001")?.constantTimeEquals(seed) == true)
        #expect(SeedSealing.open(sealed, key: key, user: "mallory", serial: "1000000001") == nil)
        #expect(SeedSealing.open(sealed, key: key, user: "alice", serial: "1000000002") == nil)
        var tampered = sealed
        tampered[14] ^= 1
        #expect(SeedSealing.open(tampered, key: key, user: "alice", serial: "1000000001") == nil)
        let otherKey = try #require(SecretBytes.random(count: 32))
        #expect(SeedSealing.open(sealed, key: otherKey, user: "alice", serial: "1000000001") == nil)
        // Two seals of the same seed differ (fresh nonce).
        #expect(try SeedSealing.seal(seed, key: key, user: "alice", serial: "1000000001") != sealed)
    }

    @Test func aSeedMovedToAnotherUserDoesNotVerify() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 20))
        let token = try temp.store.enroll(user: "alice", parameters: OATHParameters(kind: .hotp), seed: seed, nickname: "", issuer: "", maxTokens: 10, now: 1)
        try temp.store.db.prepare("UPDATE tokens SET user = 'mallory' WHERE serial = ?").bind(.text(token.serial)).run()
        #expect(throws: StoreError(.corrupt, "")) { try temp.store.verify("mallory", code(seed, counter: 0), now: 1) }
    }

    @Test func gcmMatchesAnIndependentImplementation() throws {
        // NIST GCM test case 14 (AES-256, zero key, zero 96-bit IV, one zero block).
        let key = SecretBytes(count: 32)
        let zeros = [UInt8](repeating: 0, count: 16)
        var out = [UInt8](repeating: 0, count: 16)
        var tag = [UInt8](repeating: 0, count: 16)
        let nonce = [UInt8](repeating: 0, count: 12)
        let ok = key.withUnsafeBytes { k in securotp_seal_for_test(k, nonce, zeros, &out, &tag) }
        #expect(ok)
        #expect(Hex.encode(out) == "cea7403d4d606b6e074ec5d3baf39d18")
        #expect(Hex.encode(tag) == "d0d1c8a799996bf0265b98b5d48ab919")
    }
}

import COpenSSL
func securotp_seal_for_test(_ key: UnsafeBufferPointer<UInt8>, _ nonce: [UInt8], _ plain: [UInt8], _ out: inout [UInt8], _ tag: inout [UInt8]) -> Bool {
    securotp_aes256gcm_seal(key.baseAddress, nonce, nil, 0, plain, plain.count, &out, &tag) == 1
}

@Suite struct StoreFileTests {
    @Test func refusesFilesOthersCanRead() throws {
        let temp = try TemporaryStore()
        for path in [temp.paths.keyFile, temp.paths.database] {
            chmod(path, 0o640)
            #expect {
                _ = try Store.open(temp.paths, .asIs)
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .permissions && error.message.contains(path) && error.message.contains("chmod 600")
            }
            chmod(path, 0o600)
        }
        _ = try Store.open(temp.paths, .asIs)
    }

    @Test func refusesASymlinkedKeyFile() throws {
        let temp = try TemporaryStore()
        let real = temp.directory + "/real.key"
        try FileManager.default.moveItem(atPath: temp.paths.keyFile, toPath: real)
        try FileManager.default.createSymbolicLink(atPath: temp.paths.keyFile, withDestinationPath: real)
        #expect(throws: StoreError(.permissions, "")) { try Store.open(temp.paths, .asIs) }
    }

    @Test func missingKeyWithExistingDatabaseIsNotRecreated() throws {
        let temp = try TemporaryStore()
        try FileManager.default.removeItem(atPath: temp.paths.keyFile)
        #expect(throws: StoreError(.missing, "")) { try Store.open(temp.paths, .create) }
        #expect(!FileManager.default.fileExists(atPath: temp.paths.keyFile))
    }

    @Test func refusesANewerSchema() throws {
        let temp = try TemporaryStore()
        try temp.store.db.execute("PRAGMA user_version = 99")
        #expect(throws: StoreError(.corrupt, "")) { try Store.open(temp.paths, .asIs) }
    }

    @Test func tokenLimitAndNicknames() throws {
        let temp = try TemporaryStore()
        let seed = try #require(SecretBytes.random(count: 20))
        let first = try temp.store.enroll(user: "u", parameters: OATHParameters(kind: .totp), seed: seed, nickname: "phone", issuer: "", maxTokens: 2, now: 1)
        _ = try temp.store.enroll(user: "u", parameters: OATHParameters(kind: .totp), seed: seed, nickname: "", issuer: "", maxTokens: 2, now: 2)
        #expect(throws: StoreError(.limit, "")) {
            try temp.store.enroll(user: "u", parameters: OATHParameters(kind: .totp), seed: seed, nickname: "", issuer: "", maxTokens: 2, now: 3)
        }
        #expect(throws: StoreError(.invalidInput, "")) { try temp.store.setNickname(user: "u", serial: first.serial, nickname: String(repeating: "x", count: 33)) }
        try temp.store.setNickname(user: "u", serial: first.serial, nickname: String(repeating: "é", count: 32))
        #expect(throws: StoreError(.notFound, "")) { try temp.store.setNickname(user: "other", serial: first.serial, nickname: "x") }
        #expect(try temp.store.reset(user: "u") == 2)
        #expect(try temp.store.tokens(user: "u").isEmpty)
    }

    @Test func bindingIDsAreStablePerHostAndUser() throws {
        let a = try TemporaryStore(), b = try TemporaryStore()
        let id = a.store.bindingID(user: "alice")
        #expect(id.count == 24 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(try Store.open(a.paths, .asIs).bindingID(user: "alice") == id)
        #expect(a.store.bindingID(user: "bob") != id)
        #expect(b.store.bindingID(user: "alice") != id)
    }

    @Test(arguments: ["", "-rf", "a b", "a/b", "a:b", "tab\tname"])
    func rejectsBadUserNames(name: String) {
        #expect(throws: StoreError(.invalidInput, "")) { try Store.validate(user: name) }
    }
}

@Suite struct SettingsTests {
    @Test func fileThenArgumentsOverride() throws {
        var settings = Settings()
        try settings.apply(fileText: "# comment\n\nwindow = 2\nnullok = yes\ngroups = wheel, !contractors\nprompt = Code please: \n", path: "/etc/x.conf")
        #expect(settings.policy.window == 2 && settings.nullok && settings.prompt == "Code please: ")
        #expect(settings.groups.covers(groups: ["wheel"]) && !settings.groups.covers(groups: ["wheel", "contractors"]) && !settings.groups.covers(groups: ["staff"]))
        try settings.apply(key: "window", value: "0", origin: .argument)
        try settings.apply(key: "nullok", value: nil, origin: .argument)
        #expect(settings.policy.window == 0)
    }

    @Test(arguments: [
        ("windw = 1", "/etc/x.conf:1: windw: unknown setting"),
        ("\nwindow = 11", "/etc/x.conf:2: window: expected a whole number 0–10"),
        ("deny = -1", "/etc/x.conf:1: deny"),
        ("nullok = maybe", "/etc/x.conf:1: nullok: expected yes or no"),
        ("state_dir = /tmp", "/etc/x.conf:1: state_dir can only be given"),
        ("just words", "/etc/x.conf:1: expected key = value"),
        ("database = relative.db", "/etc/x.conf:1: database: expected an absolute path"),
    ])
    func badLinesNameFileLineAndKey(text: String, expected: String) {
        var settings = Settings()
        #expect {
            try settings.apply(fileText: text, path: "/etc/x.conf")
        } throws: { error in
            (error as? StoreError).map { $0.code == .config && $0.message.hasPrefix(expected) } ?? false
        }
    }

    @Test func moduleArgumentsChooseFilesFirst() throws {
        let temp = try TemporaryStore()
        let config = temp.directory + "/securotp.conf"
        try "deny = 7\n".write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o644)
        #expect(throws: StoreError(.permissions, "")) { try Settings.fromModuleArguments(["state_dir=\(temp.directory)"]) }
        chmod(config, 0o600)
        let settings = try Settings.fromModuleArguments(["deny=2", "state_dir=\(temp.directory)"])
        #expect(settings.policy.deny == 2)
        #expect(settings.paths.database == temp.directory + "/securotp.db")
        #expect(try Settings.fromModuleArguments(["state_dir=\(temp.directory)"]).policy.deny == 7)
        #expect(throws: StoreError(.config, "")) { try Settings.fromModuleArguments(["conf=/nonexistent/securotp.conf"]) }
        #expect(throws: StoreError(.config, "")) { try Settings.fromModuleArguments(["use_first_pass", "forward_pass", "state_dir=\(temp.directory)"]) }
        #expect(throws: StoreError(.config, "")) { try Settings.fromModuleArguments(["bogus", "state_dir=\(temp.directory)"]) }
    }
}
