// Offline codes (issue 4.6): after an online login the validator hands a host with
// `--offline-codes N` hashes of the user's next HOTP codes; while the validator is down the
// real module accepts those, each once, and back online it reports what it used and refills.
import Foundation
import Glibc
import Testing

@Suite("Remote mode: offline codes while the validator is unreachable")
struct RemoteOfflineTests {
    /// A world whose host "laptop" may cache `count` codes, a HOTP token for root, and the
    /// host-side cache file the module keeps for root.
    struct Laptop {
        let world: RemoteWorld
        let credential: String
        let secret: String
        let serial: String
        var cacheFile: String { world.hostState + "/offline/root.cache" }

        init(count: Int = 4) throws {
            world = try RemoteWorld()
            credential = world.box.path("laptop.cred")
            let added = try world.cli(["host", "add", "laptop", "--offline-codes", "\(count)", "--output", credential])
            guard added.status == 0 else { throw HarnessError("host add failed:\n\(added)") }
            let token = try world.enroll("root", ["--hotp"])
            secret = token.secret
            serial = token.serial
        }

        func code(_ counter: UInt64) throws -> String { try Oath.hotp(secret, counter: counter) }

        /// A service on the laptop asking `url` (a running validator's, or one nobody answers).
        func service(_ name: String, _ url: String, _ more: [String] = []) throws -> String {
            try world.box.service(name, world.arguments(url, credential: credential, more), stateDirectory: world.hostState)
        }

        func cache() -> String { (try? String(contentsOfFile: cacheFile, encoding: .utf8)) ?? "(no cache file)" }

        func lines(_ prefix: String) -> [String] { cache().split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix) } }
    }

    @Test("Down: cached codes log in once each, in any order forward; back online the used ones are withdrawn and the cache refills")
    func offlineAndRefill() throws {
        let laptop = try Laptop()
        let box = laptop.world.box
        let validator = try laptop.world.start()
        let online = try laptop.service("online", validator.url)
        #expect(try box.login(online, "root", [laptop.code(0)]).status == PAM.success)

        // Four hashes of codes 1–4, owner-only, and none of the codes in the clear.
        var info = stat()
        #expect(lstat(laptop.cacheFile, &info) == 0 && info.st_mode & 0o077 == 0, "cache file mode \(String(info.st_mode, radix: 8))")
        #expect(laptop.lines("code ").count == 4, "\(laptop.cache())")
        let contents = laptop.cache()
        for counter in 1...4 { #expect(!contents.contains(try laptop.code(UInt64(counter)))) }
        _ = try validator.stop()

        let down = try laptop.service("down", "https://127.0.0.1:\(try SilentListener.closedPort())")
        let second = try box.login(down, "root", [laptop.code(2)])
        #expect(second.status == PAM.success, "code 2 from the cache: \(second)")
        #expect(second.prompts == [PAM.defaultPrompt], "\(second)")
        #expect(try box.login(down, "root", [laptop.code(2)]).status == PAM.authError, "an offline code works once")
        #expect(try box.login(down, "root", [laptop.code(1)]).status == PAM.authError, "codes before a used one are gone")
        #expect(try box.login(down, "root", [laptop.code(3)]).status == PAM.success)
        #expect(laptop.lines("code ").count == 1 && laptop.lines("used ") == ["used \(laptop.serial) 4"], "\(laptop.cache())")

        // Back online (a new port): the used codes are reported and never accepted again; the
        // next online login refills the cache to four codes ahead.
        let again = try laptop.world.start()
        let back = try laptop.service("back", again.url)
        #expect(try box.login(back, "root", [laptop.code(3)]).status == PAM.authError, "a code used offline is refused online")
        #expect(laptop.lines("used ").isEmpty, "the validator withdrew what was reported: \(laptop.cache())")
        #expect(try box.login(back, "root", [laptop.code(4)]).status == PAM.success, "the last cached code, now online")
        let counters = laptop.lines("code ").compactMap { $0.split(separator: " ").dropFirst(4).first.flatMap { Int($0) } }
        #expect(counters.sorted() == [5, 6, 7, 8], "refilled: \(laptop.cache())")
        _ = try again.stop()
    }

    @Test("A policy that leaves out otp deletes the user's cached offline codes at the next preflight: cutting the host off brings none back")
    func policyWithoutOTPDeletesCache() throws {
        let laptop = try RemoteOfflineTests.Laptop()
        let box = laptop.world.box
        let validator = try laptop.world.start()
        let online = try laptop.service("online", validator.url)
        #expect(try box.login(online, "root", [laptop.code(0)]).status == PAM.success)
        #expect(laptop.lines("code ").count == 4, "\(laptop.cache())")

        #expect(try laptop.world.cli(["policy", "root", "--methods", "push"]).status == 0)
        let refused = try box.login(online, "root", [laptop.code(1)])
        #expect(refused.status == PAM.authError, "otp left out: \(refused)")
        #expect(!FileManager.default.fileExists(atPath: laptop.cacheFile), "deleted: \(laptop.cache())")
        _ = try validator.stop()

        let down = try laptop.service("down", "https://127.0.0.1:\(try SilentListener.closedPort())")
        for counter: UInt64 in 1...4 {
            #expect(try box.login(down, "root", [laptop.code(counter)]).status != PAM.success, "no cached code \(counter) once otp is gone")
        }
    }

    @Test("Down: wrong offline codes lock the cache; an edited or copied cache is refused and failmode decides")
    func lockAndTamper() throws {
        let laptop = try Laptop(count: 3)
        let box = laptop.world.box
        let validator = try laptop.world.start()
        #expect(try box.login(try laptop.service("online", validator.url), "root", [laptop.code(0)]).status == PAM.success)
        _ = try validator.stop()
        let url = "https://127.0.0.1:\(try SilentListener.closedPort())"
        let original = try Data(contentsOf: URL(fileURLWithPath: laptop.cacheFile))

        // Offline codes are passcodes: a host whose methods= leaves out otp takes none.
        let keysOnly = try box.login(try laptop.service("keys-only", url, ["methods=fido"]), "root", [laptop.code(1)])
        #expect(keysOnly.status == PAM.authInfoUnavailable && keysOnly.prompts.isEmpty, "methods=fido: \(keysOnly)")

        // One hex digit of a hash changed: the MAC fails, the cache is not used.
        var edited = original
        let index = try #require(edited.lastIndex(of: UInt8(ascii: " ")).map { $0 - 3 })
        edited[index] = edited[index] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        try edited.write(to: URL(fileURLWithPath: laptop.cacheFile))
        chmod(laptop.cacheFile, 0o600)
        let tampered = try box.login(try laptop.service("tampered", url), "root", [laptop.code(1)])
        #expect(tampered.status == PAM.authInfoUnavailable && tampered.prompts.isEmpty, "failmode=secure: \(tampered)")

        // The same file under another user's name: the user is bound into the MAC.
        let copy = laptop.world.hostState + "/offline/nobody.cache"
        try original.write(to: URL(fileURLWithPath: copy))
        chmod(copy, 0o600)
        let copied = try box.login(try laptop.service("copied", url), "nobody", [laptop.code(1)])
        #expect(copied.status == PAM.authInfoUnavailable, "\(copied)")

        // Restored: two wrong codes with deny=2 lock offline logins, and then the right code fails too.
        try original.write(to: URL(fileURLWithPath: laptop.cacheFile))
        chmod(laptop.cacheFile, 0o600)
        let strict = try laptop.service("strict", url, ["deny=2", "unlock_time=600"])
        let wrong = try Oath.wrongHOTP(laptop.secret)
        #expect(try box.login(strict, "root", [wrong]).status == PAM.authError)
        #expect(try box.login(strict, "root", [wrong]).status == PAM.authError)
        let locked = try box.login(strict, "root", [laptop.code(1)])
        #expect(locked.status == PAM.authInfoUnavailable && locked.prompts.isEmpty, "locked offline codes are not offered: \(locked)")
        #expect(laptop.lines("failures ").first?.hasPrefix("failures 2 ") == true, "\(laptop.cache())")
    }

    @Test("Offline logins are logged as such, with what is left — and never the code", .enabled(if: SyslogCapture.available, "needs root and mount namespaces (unshare)"))
    func logged() throws {
        let laptop = try Laptop(count: 2)
        let box = laptop.world.box
        let validator = try laptop.world.start()
        #expect(try box.login(try laptop.service("online", validator.url), "root", [laptop.code(0)]).status == PAM.success)
        _ = try validator.stop()
        let down = try laptop.service("down", "https://127.0.0.1:\(try SilentListener.closedPort())")
        let log = try SyslogCapture(box)
        let wrong = try Oath.wrongHOTP(laptop.secret)
        #expect(try log.login(box, down, "root", [wrong]).status == PAM.authError)
        #expect(try log.login(box, down, "root", [laptop.code(1)]).status == PAM.success)
        let lines = log.lines()
        #expect(lines.contains { $0.contains("unavailable during preflight") && $0.contains("checking root against this host's offline codes") }, "\(lines)")
        #expect(lines.contains { $0.contains("rejected code for root (not one of this host's offline codes); 1 consecutive failure [offline]") }, "\(lines)")
        #expect(lines.contains { $0.contains("accepted code for root (token \(laptop.serial), offline code, 1 left on this host) [offline]") }, "\(lines)")
        let typed = [wrong, try laptop.code(1)]
        for line in lines.map({ $0.replacingOccurrences(of: laptop.serial, with: "S") }) {
            for code in typed where line.contains(code) { Issue.record("a code is in the log: \(line)") }
        }
    }
}
