import Foundation
import Glibc
import SecurOTPAuthenticator
import SecurOTPCore
import Testing

/// The store as files: private modes, sealed seeds, and the binding to uid and machine ID that
/// makes a copied store fail with a clear error instead of producing wrong codes.
@Suite("Authenticator store: files, sealing and binding")
struct StoreBindingTests {
    static let uri = "otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP&issuer=ACME"
    /// JBSWY3DPEHPK3PXP decoded: what must never be found in the files.
    static let seed: [UInt8] = [0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x21, 0xde, 0xad, 0xbe, 0xef]

    @Test("A new store: directory 0700, key and database 0600, all owned by the user")
    func newStoreIsPrivate() throws {
        let scratch = try Scratch()
        let paths = scratch.paths
        _ = try scratch.open()
        #expect(scratch.mode(paths.directory) == 0o700)
        #expect(scratch.mode(paths.keyFile) == 0o600)
        #expect(scratch.mode(paths.database) == 0o600)
        for path in [paths.directory, paths.keyFile, paths.database] { #expect(scratch.owner(path) == geteuid(), "\(path)") }
        #expect(scratch.bytes(paths.keyFile).count == 36 && scratch.bytes(paths.keyFile).prefix(4) == Array("SOA1".utf8)[...])
    }

    @Test("The seed is sealed: neither the database nor the key file holds it, in any encoding")
    func seedNeverInTheClear() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        _ = try store.importText(Self.uri)
        for path in [scratch.paths.database, scratch.paths.keyFile] {
            let bytes = scratch.bytes(path)
            #expect(!bytes.isEmpty)
            for needle in [Self.seed, Array("JBSWY3DPEHPK3PXP".utf8), Array(Hex.encode(Self.seed).utf8)] {
                #expect(!contains(bytes, needle), "\(path) holds the seed")
            }
        }
    }

    @Test("Reopening for the same user and machine gives the same binding ID and the same codes")
    func reopenSameIdentity() throws {
        let scratch = try Scratch()
        let first = try scratch.open()
        let token = try #require(try first.importText(Self.uri).first)
        let code = try first.codes(serial: token.serial, pin: nil, now: Scratch.now)
        let again = try scratch.open(create: false)
        #expect(again.bindingID == first.bindingID)
        #expect(try again.codes(serial: token.serial, pin: nil, now: Scratch.now) == code)
    }

    @Test("Binding IDs: 24 lowercase hex; differ per uid, per machine and per store")
    func bindingIDs() throws {
        let scratch = try Scratch()
        let mine = try scratch.open().bindingID
        #expect(mine.count == 24 && mine.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(mine)")
        // The same key file under another identity: copies, so each opens as its own new store.
        let otherUID = try scratch.copyStore(to: "uid")
        try FileManager.default.removeItem(atPath: otherUID.database)
        let byUID = try scratch.open(DeviceIdentity(uid: geteuid() &+ 1, machineID: Scratch.machine), paths: otherUID).bindingID
        let otherMachine = try scratch.copyStore(to: "machine")
        try FileManager.default.removeItem(atPath: otherMachine.database)
        let byMachine = try scratch.open(DeviceIdentity(uid: geteuid(), machineID: Scratch.otherMachine), paths: otherMachine).bindingID
        let byStore = try scratch.open(paths: AuthenticatorPaths(directory: scratch.root + "/another")).bindingID
        #expect(Set([mine, byUID, byMachine, byStore]).count == 4, "\([mine, byUID, byMachine, byStore])")
    }

    @Test("A copied store opens for the same uid and machine, and is refused under another machine ID or uid")
    func copiedStoreRefusedElsewhere() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let token = try #require(try store.importText(Self.uri).first)
        let copy = try scratch.copyStore(to: "copy")

        let same = try scratch.open(paths: copy, create: false)
        #expect(try same.codes(serial: token.serial, pin: nil, now: Scratch.now) == store.codes(serial: token.serial, pin: nil, now: Scratch.now))

        let elsewhere = caught { try scratch.open(DeviceIdentity(uid: geteuid(), machineID: Scratch.otherMachine), paths: copy, create: false) }
        let machineError = try #require(elsewhere as? AuthenticatorError)
        #expect(machineError.code == .otherDevice)
        #expect(machineError.message.contains("was made for another user or machine") && machineError.message.contains("machine ID"), "\(machineError)")
        #expect(machineError.message.contains(copy.directory) && machineError.message.contains("reset"), "\(machineError)")

        let otherUser = caught { try scratch.open(DeviceIdentity(uid: geteuid() &+ 1, machineID: Scratch.machine), paths: copy, create: false) }
        let uidError = try #require(otherUser as? AuthenticatorError)
        #expect(uidError.code == .otherDevice)
        #expect(uidError.message.contains("was made for another user or machine") && uidError.message.contains("uid \(geteuid())"), "\(uidError)")
    }

    @Test("Lying about the owner in the database does not help: the key check still refuses")
    func ownerRowIsNotTrusted() throws {
        let scratch = try Scratch()
        _ = try scratch.open().importText(Self.uri)
        let copy = try scratch.copyStore(to: "copy")
        let intruder = DeviceIdentity(uid: geteuid() &+ 7, machineID: Scratch.otherMachine)
        try scratch.sql("UPDATE store SET uid = \(intruder.uid), machine_tag = 'forged'", paths: copy)
        let error = try #require(caught { try scratch.open(intruder, paths: copy, create: false) } as? AuthenticatorError)
        #expect(error.code == .corrupt || error.code == .otherDevice, "\(error)")
        #expect(error.message.contains(copy.keyFile) || error.message.contains("another user or machine"), "\(error)")
    }

    @Test("A replaced key file is named, never used to make codes")
    func replacedKeyFile() throws {
        let scratch = try Scratch()
        _ = try scratch.open().importText(Self.uri)
        let other = try Scratch()
        _ = try other.open()
        try FileManager.default.removeItem(atPath: scratch.paths.keyFile)
        try FileManager.default.copyItem(atPath: other.paths.keyFile, toPath: scratch.paths.keyFile)
        let error = try #require(caught { try scratch.open(create: false) } as? AuthenticatorError)
        #expect(error.code == .corrupt)
        #expect(error.message.contains(scratch.paths.keyFile) && error.message.contains("does not open"), "\(error)")
    }

    @Test("A database without its key file is refused, not silently given a new key")
    func missingKeyFile() throws {
        let scratch = try Scratch()
        _ = try scratch.open().importText(Self.uri)
        try FileManager.default.removeItem(atPath: scratch.paths.keyFile)
        for create in [false, true] {
            let error = try #require(caught { try scratch.open(create: create) } as? AuthenticatorError)
            #expect(error.code == .missing && error.message.contains("authenticator.key is missing"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.paths.keyFile))
    }

    struct Loosened: Sendable, CustomTestStringConvertible {
        let file: String
        let mode: mode_t
        let fix: String
        var testDescription: String { "\(file) \(String(mode, radix: 8))" }
    }

    @Test("Files or a directory others can reach are refused, naming the file and the fix", arguments: [
        Loosened(file: "", mode: 0o750, fix: "chmod 700"),
        Loosened(file: "", mode: 0o701, fix: "chmod 700"),
        Loosened(file: "/authenticator.key", mode: 0o640, fix: "chmod 600"),
        Loosened(file: "/authenticator.key", mode: 0o604, fix: "chmod 600"),
        Loosened(file: "/authenticator.db", mode: 0o660, fix: "chmod 600"),
        Loosened(file: "/authenticator.db", mode: 0o644, fix: "chmod 600"),
    ])
    func loosePermissionsRefused(_ case: Loosened) throws {
        let scratch = try Scratch()
        _ = try scratch.open()
        let path = scratch.paths.directory + `case`.file
        #expect(chmod(path, `case`.mode) == 0)
        let error = try #require(caught { try scratch.open(create: false) } as? AuthenticatorError)
        #expect(error.code == .permissions)
        #expect(error.message.contains(path) && error.message.contains("\(`case`.fix) \(path)"), "\(error)")
        #expect(error.message.contains("mode 0\(String(`case`.mode, radix: 8))"), "\(error)")
        // Creating does not repair or reuse it either.
        #expect((caught { try scratch.open(create: true) } as? AuthenticatorError)?.code == .permissions)
    }

    @Test("A symbolic link in place of the key file is refused")
    func symlinkRefused() throws {
        let scratch = try Scratch()
        _ = try scratch.open()
        let real = scratch.root + "/real.key"
        try FileManager.default.moveItem(atPath: scratch.paths.keyFile, toPath: real)
        #expect(symlink(real, scratch.paths.keyFile) == 0)
        let error = try #require(caught { try scratch.open(create: false) } as? AuthenticatorError)
        #expect(error.code == .permissions && error.message.contains("symbolic link"), "\(error)")
    }

    @Test("A store owned by another user is refused, even for root")
    func foreignOwnerRefused() throws {
        try #require(geteuid() == 0, "chown to another uid needs root; the suite runs as root in make test")
        let scratch = try Scratch()
        _ = try scratch.open()
        #expect(chown(scratch.paths.directory, 65_534, 65_534) == 0)
        let error = try #require(caught { try scratch.open(create: false) } as? AuthenticatorError)
        #expect(error.code == .permissions && error.message.contains("owned by uid 65534, not by you"), "\(error)")
    }

    @Test("No store yet: opening without create names the way to make one and creates nothing")
    func noStoreYet() throws {
        let scratch = try Scratch()
        #expect(!AuthenticatorStore.exists(scratch.paths))
        let error = try #require(caught { try scratch.open(create: false) } as? AuthenticatorError)
        #expect(error.code == .missing && error.message.contains("securotp-authenticator import"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: scratch.paths.directory))
    }

    @Test("A sealed seed that was altered, or moved to another serial, does not open: no codes")
    func tamperedSeedRefused() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let tokens = try store.importText(Self.uri + "\notpauth://totp/ACME:bob?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=ACME")
        let (a, b) = (tokens[0].serial, tokens[1].serial)
        // Flip one bit of a's ciphertext.
        var blob = try scratch.sealedSeed(a)
        blob[14] ^= 0x01
        try scratch.setSealedSeed(a, blob)
        let flipped = try #require(caught { try store.codes(serial: a, pin: nil, now: Scratch.now) } as? AuthenticatorError)
        #expect(flipped.code == .corrupt && flipped.message.contains("token \(a)") && flipped.message.contains("does not open"), "\(flipped)")
        // b's intact blob copied onto a's row: sealed for serial b, it does not open as a.
        try scratch.setSealedSeed(a, try scratch.sealedSeed(b))
        let moved = try #require(caught { try store.codes(serial: a, pin: nil, now: Scratch.now) } as? AuthenticatorError)
        #expect(moved.code == .corrupt, "\(moved)")
        #expect(try store.codes(serial: b, pin: nil, now: Scratch.now).current.count == 6, "b is untouched")
    }

    @Test("Reset wipes every token, zeroes and replaces the key, changes the binding ID")
    func resetWipes() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        _ = try store.importText(Self.uri)
        let oldKey = scratch.bytes(scratch.paths.keyFile)
        #expect(AuthenticatorStore.tokenCount(scratch.paths) == 1)
        let (removed, fresh) = try AuthenticatorStore.reset(scratch.paths, identity: Scratch.me, now: Scratch.now)
        #expect(removed == 1)
        #expect(try fresh.tokens().isEmpty)
        #expect(fresh.bindingID != store.bindingID)
        #expect(scratch.bytes(scratch.paths.keyFile) != oldKey && scratch.bytes(scratch.paths.keyFile).count == 36)
        #expect(scratch.mode(scratch.paths.keyFile) == 0o600 && scratch.mode(scratch.paths.database) == 0o600)
        #expect(try scratch.open(create: false).bindingID == fresh.bindingID, "the new binding ID is stable")
    }

    @Test("Reset starts over with a store that was made for another machine")
    func resetRecoversCopiedStore() throws {
        let scratch = try Scratch()
        _ = try scratch.open().importText(Self.uri)
        let elsewhere = DeviceIdentity(uid: geteuid(), machineID: Scratch.otherMachine)
        #expect((caught { try scratch.open(elsewhere, create: false) } as? AuthenticatorError)?.code == .otherDevice)
        let (removed, fresh) = try AuthenticatorStore.reset(scratch.paths, identity: elsewhere, now: Scratch.now)
        #expect(removed == 1)
        #expect(try fresh.tokens().isEmpty)
        #expect(try scratch.open(elsewhere, create: false).bindingID == fresh.bindingID)
    }

    @Test("Nickname: set, cleared, at most 32 characters, no control characters; unknown serials named")
    func nicknames() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let serial = try #require(try store.importText(Self.uri).first).serial
        #expect(try store.token(serial: serial).nickname == "alice", "default: the account name")
        try store.setNickname(serial: serial, nickname: "work VPN ✓")
        #expect(try store.token(serial: serial).nickname == "work VPN ✓")
        try store.setNickname(serial: serial, nickname: String(repeating: "x", count: 32))
        #expect((caught { try store.setNickname(serial: serial, nickname: String(repeating: "x", count: 33)) } as? AuthenticatorError)?.code == .invalidInput)
        #expect((caught { try store.setNickname(serial: serial, nickname: "tab\there") } as? AuthenticatorError)?.code == .invalidInput)
        #expect(try store.token(serial: serial).nickname == String(repeating: "x", count: 32), "refused names change nothing")
        let missing = try #require(caught { try store.setNickname(serial: "42", nickname: "x") } as? AuthenticatorError)
        #expect(missing.code == .notFound && missing.message.contains("42"))
    }

    @Test("Delete removes one token; an unknown serial is named")
    func deleteToken() throws {
        let scratch = try Scratch()
        let store = try scratch.open()
        let tokens = try store.importText(Self.uri + "\notpauth://hotp/ACME:bob?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&counter=0")
        try store.delete(serial: tokens[0].serial)
        #expect(try store.tokens().map(\.serial) == [tokens[1].serial])
        #expect((caught { try store.delete(serial: tokens[0].serial) } as? AuthenticatorError)?.code == .notFound)
        #expect((caught { try store.codes(serial: tokens[0].serial, pin: nil, now: Scratch.now) } as? AuthenticatorError)?.code == .notFound)
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

/// Where the store lives, and which machine ID binds it.
@Suite("Authenticator paths and machine identity")
struct PathsAndIdentityTests {
    @Test("--data-dir, then SECUROTP_AUTHENTICATOR_DIR, then $XDG_DATA_HOME/securotp, then ~/.local/share/securotp")
    func resolution() throws {
        let env = ["SECUROTP_AUTHENTICATOR_DIR": "/env/dir", "XDG_DATA_HOME": "/xdg", "HOME": "/home/alice"]
        #expect(try AuthenticatorPaths.resolve(dataDirectory: "/given/", environment: env).directory == "/given")
        #expect(try AuthenticatorPaths.resolve(dataDirectory: "rel", environment: env, workingDirectory: "/work").directory == "/work/rel")
        #expect(try AuthenticatorPaths.resolve(dataDirectory: nil, environment: env).directory == "/env/dir")
        #expect(try AuthenticatorPaths.resolve(dataDirectory: nil, environment: ["XDG_DATA_HOME": "/xdg", "HOME": "/h"]).directory == "/xdg/securotp")
        #expect(try AuthenticatorPaths.resolve(dataDirectory: nil, environment: ["XDG_DATA_HOME": "relative", "HOME": "/h"]).directory == "/h/.local/share/securotp",
                "a relative XDG_DATA_HOME is ignored, as the XDG spec says")
        #expect(try AuthenticatorPaths.resolve(dataDirectory: nil, environment: ["HOME": "/h"]).keyFile == "/h/.local/share/securotp/authenticator.key")
    }

    @Test("The machine ID: 32 hex digits from the first file that has one; the override names another file")
    func machineID() throws {
        let scratch = try Scratch()
        let good = try scratch.write("ABCDEF0123456789abcdef0123456789\n", "machine-id", mode: 0o644)
        let empty = try scratch.write("", "empty", mode: 0o644)
        let junk = try scratch.write("uninitialized\n", "junk", mode: 0o644)
        let read = try DeviceIdentity.current(environment: [DeviceIdentity.machineIDFileVariable: good])
        #expect(read.machineID == "abcdef0123456789abcdef0123456789" && read.uid == geteuid())
        for bad in [empty, junk, scratch.root + "/absent"] {
            let error = try #require(caught { try DeviceIdentity.current(environment: [DeviceIdentity.machineIDFileVariable: bad]) } as? AuthenticatorError)
            #expect(error.code == .missing && error.message.contains(bad), "\(error)")
        }
        // Without the override: this machine's real files.
        let system = try DeviceIdentity.current(environment: [:])
        let etc = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)) ?? ""
        let dbus = (try? String(contentsOfFile: "/var/lib/dbus/machine-id", encoding: .utf8)) ?? ""
        #expect([etc, dbus].map { $0.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() }.contains(system.machineID))
    }
}
