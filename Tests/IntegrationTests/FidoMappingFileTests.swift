// Mapping files read as pam_u2f reads them (docs/fido.md, "pam_u2f's mapping files"; issue 25,
// item 9): through the real libpam loading the real module, with softfido keys and Debian's
// pam_u2f beside it where it shows what pam_u2f does with the same file.
import Foundation
import Testing

@Suite("FIDO: mapping files read as pam_u2f reads them", .serialized)
struct FidoMappingFileTests {
    private func options(_ authfile: String, _ extra: [String] = []) -> [String] {
        ["authfile=" + authfile, "cue", "origin=" + SoftFIDO.defaultOrigin, "appid=" + SoftFIDO.defaultOrigin, "nouserok"] + extra
    }

    private func line(_ key: SoftKey, _ user: String, _ arguments: [String] = []) throws -> String {
        let made = try key.pamu2fcfg(user, arguments)
        try #require(made.status == 0, "\(made)")
        return try #require(made.lines.first { $0.hasPrefix(user + ":") }, "\(made)")
    }

    /// A credential field no key holds: a random key handle and public key.
    private func stranger() -> String {
        let handle = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let key = Data((0..<64).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        return handle + "," + key + ",es256,+presence"
    }

    @Test("CRLF with no line end after the last line: root logs in with root's key only, daemon with daemon's, as with pam_u2f")
    func crlfFile() throws {
        let box = try Sandbox()
        let rootKey = SoftKey(box), daemonKey = SoftKey(box, name: "other.state")
        let file = box.path("u2f_mappings")
        try box.write(try line(rootKey, "root") + "\r\n" + (try line(daemonKey, "daemon")), to: file, mode: 0o644)
        try box.write("auth required \(try SoftFIDO.pamU2F()) \(options(file).joined(separator: " "))\n", to: box.pamDirectory + "/u2f")
        #expect(try daemonKey.login(box, "u2f", "root").status != PAM.success, "pam_u2f refuses another user's key")
        #expect(try rootKey.login(box, "u2f", "root").status == PAM.success, "pam_u2f takes root's own")

        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let service = try box.service("crlf", options(file))
        let other = try daemonKey.login(box, service, "root")
        #expect(other.status == PAM.authError, "root with daemon's key: \(other)")
        #expect(try rootKey.login(box, service, "root").status == PAM.success)
        #expect(try daemonKey.login(box, service, "daemon").status == PAM.success)
        #expect(try rootKey.login(box, service, "daemon").status == PAM.authError)
    }

    @Test("nouserok: a user named by a malformed line holds a key (refused, never PAM_IGNORE); a line pam_u2f reads logs in")
    func namedLineIsAHolder() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let good = try line(key, "daemon").dropFirst("daemon:".count)
        let file = box.path("u2f_mappings")
        try box.write("root:garbage\ndaemon:\(good.replacingOccurrences(of: ",es256,", with: ",ES256,"))+foo,extra::\n", to: file, mode: 0o644)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let probe = try box.ignoreProbe("named", options(file))
        let malformed = try key.login(box, probe, "root", ["123456"])
        #expect(malformed.status != PAM.ignoreProbeExit && malformed.status != PAM.success, "\(malformed)")
        let absent = try key.login(box, probe, "bin")
        #expect(absent.status == PAM.ignoreProbeExit, "a user without a line stays nouserok's: \(absent)")
        let shapes = try key.login(box, probe, "daemon")
        #expect(shapes.status == PAM.success, "ES256, +presence+foo, an extra field, a trailing :: as pam_u2f reads them: \(shapes)")
    }

    @Test("A byte that is not UTF-8 in another line touches only that line")
    func notUTF8Elsewhere() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let file = box.path("u2f_mappings")
        let bytes = Array("# caf".utf8) + [0xE9] + Array("\nj".utf8) + [0xF6] + Array("rg:\(stranger())\n\(try line(key, "root"))\n".utf8)
        try box.write(bytes: bytes, to: file, mode: 0o644)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let service = try box.service("latin1", options(file))
        #expect(try key.login(box, service, "root").status == PAM.success)
        let probe = try box.ignoreProbe("latin1-probe", options(file))
        #expect(try key.login(box, probe, "bin").status == PAM.ignoreProbeExit, "a user without a line is nouserok's")
        let imported = try box.cli(["import", "root", file])
        #expect(imported.status == 0, "\(imported)")
    }

    @Test("max_devices counts the line's credentials in the line's order, malformed ones included, in the file and after securotp import")
    func lineOrderAndMaxDevices() throws {
        let box = try Sandbox()
        let first = SoftKey(box), last = SoftKey(box, name: "other.state")
        let firstField = try line(first, "root").dropFirst("root:".count), lastField = try line(last, "root").dropFirst("root:".count)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let file = box.path("u2f_mappings")
        // pam_u2f with max_devices=1 asks for the first credential only, a broken one too.
        try box.write("root:AAAA,AAAA,es256,+presence:\(firstField)\n", to: file, mode: 0o644)
        let one = try box.service("one", options(file, ["max_devices=1"]))
        #expect(try first.login(box, one, "root").status == PAM.authError, "the first credential is the broken one")

        let stored = box.path("to_import")
        let fields = [String(firstField)] + (0..<6).map { _ in stranger() } + [String(lastField)]
        try box.write("root:" + fields.joined(separator: ":") + "\n", to: stored, mode: 0o644)
        let imported = try box.cli(["import", "root", stored])
        try #require(imported.status == 0, "\(imported)")
        let storeOnly = try box.service("store-one", ["origin=" + SoftFIDO.defaultOrigin, "max_devices=1"])
        #expect(try first.login(box, storeOnly, "root").status == PAM.success, "the line's first credential is the one asked for")
        #expect(try last.login(box, storeOnly, "root").status == PAM.authError, "the line's last is beyond max_devices=1")
    }

    @Test("securotp import reads CRLF files and a trailing : or ::, and --origin binds a pamu2fcfg -o line to its origin")
    func importShapes() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let file = box.path("crlf_mappings")
        try box.write("daemon:\(stranger())\r\n\(try line(key, "root"))\r\n", to: file, mode: 0o644)
        let crlf = try box.cli(["import", "root", file])
        #expect(crlf.status == 0, "\(crlf)")
        #expect(try key.login(box, try box.service("crlf", ["origin=" + SoftFIDO.defaultOrigin]), "root").status == PAM.success)

        let elsewhere = "pam://elsewhere.example"
        let made = try line(key, "daemon", ["-o", elsewhere])
        let noOrigin = try box.cli(["import", "daemon", "--origin", "not an origin", made])
        #expect(noOrigin.status == 64, "\(noOrigin)")
        let imported = try box.cli(["import", "daemon", "--origin", elsewhere, made + "::", "--format", "json"])
        try #require(imported.status == 0, "\(imported)")
        #expect(imported.stdout.contains("elsewhere.example"), "\(imported)")
        #expect(try key.login(box, try box.service("elsewhere", ["origin=" + elsewhere]), "daemon").status == PAM.success)
        let otp = try box.cli(["import", "bin", "--origin", elsewhere, "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP"])
        #expect(otp.status == 64 && otp.stderr.contains("--origin"), "\(otp)")
    }

    @Test("The module logs SOTP-M111 naming both origins when a user's credentials were made for another origin only",
          .enabled(if: SyslogCapture.available, "needs root and mount namespaces (unshare)"))
    func otherOriginLogged() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let elsewhere = "pam://elsewhere.example"
        #expect(try box.cli(["import", "root", "--origin", elsewhere, try line(key, "root", ["-o", elsewhere])]).status == 0)
        let log = try SyslogCapture(box)
        let service = try box.service("securotp-it", ["origin=pam://here.example"])
        #expect(try log.login(box, service, "root").status != PAM.success)
        let lines = log.lines()
        let texts = ErrorCodeTests.moduleTexts(lines).filter { $0.hasPrefix("SOTP-M111: ") }
        #expect(texts.count == 1 && texts.allSatisfy { $0.contains("\"\(elsewhere)\"") && $0.contains("\"pam://here.example\"") }, "\(lines)")
    }

    @Test("import-batch and securotp.conf read CRLF line ends as line ends: each line's user gets that line's token; the file's settings hold")
    func crlfBatchAndConfig() throws {
        let box = try Sandbox()
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let batch = box.path("batch.txt")
        try box.write("root otpauth://totp/alphaacct?secret=JBSWY3DPEHPK3PXP&issuer=First\r\ndaemon otpauth://totp/betaacct?secret=KRSXG5CTMVRXEZLU&issuer=Second\r\n",
                      to: batch, mode: 0o600)
        let result = try box.cli(["import-batch", batch])
        #expect(result.status == 0, "\(result)")
        let root = try box.cli(["list", "root", "--format", "json"]), daemon = try box.cli(["list", "daemon", "--format", "json"])
        #expect(root.stdout.contains("alphaacct") && !root.stdout.contains("betaacct"), "\(root)")
        #expect(daemon.stdout.contains("betaacct"), "\(daemon)")

        // A CRLF securotp.conf: nullok holds (the old reader took "3\r\nnullok = yes" as window's value).
        try box.writeConfig("window = 3\r\nnullok = yes\r\n")
        let probe = try box.ignoreProbe("crlf-conf", [])
        let ignored = try box.login(probe, "bin")
        #expect(ignored.status == PAM.ignoreProbeExit, "\(ignored)")
    }
}
