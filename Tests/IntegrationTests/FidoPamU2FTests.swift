// pam_u2f compatibility (docs/fido.md, "pam_u2f options"): a pam_u2f line with the module name
// swapped logs in with the same mapping file through the real libpam; nouserok is PAM_IGNORE,
// never PAM_SUCCESS; the mapping file is read under the rules for policy files and never written.
import Foundation
import Testing

@Suite("FIDO: pam_u2f's options and mapping file with pam_securotp", .serialized)
struct FidoPamU2FTests {
    /// A root-owned mapping file with pamu2fcfg's line for `user`, and pam_u2f's options for it.
    private func mappingFile(_ box: Sandbox, _ key: SoftKey, user: String) throws -> (path: String, line: String) {
        let made = try key.pamu2fcfg(user)
        try #require(made.status == 0, "\(made)")
        let line = try #require(made.lines.first { $0.hasPrefix(user + ":") }, "\(made)")
        let path = box.path("u2f_mappings")
        try box.write("# pam_u2f mappings\n" + line + "\n", to: path, mode: 0o644)
        return (path, line)
    }

    /// The options of an unmodified pam_u2f line, every one with a meaning here.
    private func pamU2FOptions(authfile: String) -> [String] {
        let origin = SoftFIDO.defaultOrigin
        return ["authfile=" + authfile, "cue", "origin=" + origin, "appid=" + origin, "max_devices=4", "userpresence=1",
                "userverification=0", "pinverification=0", "nouserok"]
    }

    @Test("The same line logs in through pam_u2f.so and, with the module name swapped, through pam_securotp; the file is only read")
    func swappedModuleLogsIn() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let (authfile, _) = try mappingFile(box, key, user: user)
        let options = pamU2FOptions(authfile: authfile)
        try box.write("auth required \(try SoftFIDO.pamU2F()) \(options.joined(separator: " "))\n", to: box.pamDirectory + "/u2f")
        let viaU2F = try key.login(box, "u2f", user)
        try #require(viaU2F.status == PAM.success, "pam_u2f itself takes the line: \(viaU2F)")

        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let before = try String(contentsOfFile: authfile, encoding: .utf8)
        let service = try box.service("swapped", options)
        let first = try key.login(box, service, user)
        #expect(first.status == PAM.success, "\(first)")
        #expect(first.infos == [FidoLoginTests.cue] && first.prompts.isEmpty, "\(first)")
        #expect(try key.login(box, service, user).status == PAM.success)
        let refused = try key.refusing().login(box, service, user)
        #expect(refused.status == PAM.authError, "no touch, no login: \(refused)")
        let stranger = try SoftKey(box, name: "other.state").login(box, service, user)
        #expect(stranger.status == PAM.authError, "another key: \(stranger)")
        #expect(try String(contentsOfFile: authfile, encoding: .utf8) == before, "the mapping file is never written")
        #expect(try box.cli(["fido", "export", user]).status != 0, "nothing was copied into the store")
    }

    @Test("methods=fido,otp with nouserok: a key from authfile= left untouched is never PAM_IGNORE (the user holds a credential)")
    func untouchedKeyIsNotIgnored() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let (authfile, _) = try mappingFile(box, key, user: user)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        // No token in the store: only the mapping file knows the user holds a key.
        let probe = try box.ignoreProbe("untouched", pamU2FOptions(authfile: authfile) + ["methods=fido,otp"])
        let untouched = try key.refusing().login(box, probe, user, ["123456"])
        #expect(untouched.status != PAM.ignoreProbeExit && untouched.status != PAM.success, "\(untouched)")
    }

    @Test("nouserok: a user without credentials, or a missing mapping file, is PAM_IGNORE, never PAM_SUCCESS; without it, a failure")
    func nouserokIgnores() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let (authfile, _) = try mappingFile(box, key, user: SoftFIDO.currentUser)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        let options = pamU2FOptions(authfile: authfile)

        let probe = try box.ignoreProbe("nouserok", options)
        let absent = try key.login(box, probe, "daemon")
        #expect(absent.status == PAM.ignoreProbeExit && absent.infos.contains(PAM.ignoreProbeInfo), "\(absent)")
        let missingFile = try box.ignoreProbe("nouserok-missing", pamU2FOptions(authfile: box.path("absent")))
        let noFile = try key.login(box, missingFile, "daemon")
        #expect(noFile.status == PAM.ignoreProbeExit && noFile.infos.contains(PAM.ignoreProbeInfo), "\(noFile)")

        let strict = try box.service("strict", options.filter { $0 != "nouserok" })
        let denied = try key.login(box, strict, "daemon", ["123456"])
        #expect(denied.status != PAM.success && denied.status != PAM.ignore, "\(denied)")
        let strictMissing = try box.service("strict-missing", pamU2FOptions(authfile: box.path("absent")).filter { $0 != "nouserok" })
        #expect(try key.login(box, strictMissing, SoftFIDO.currentUser).status == PAM.authInfoUnavailable)
    }

    @Test("A mapping file others can write, or pam_u2f options with another meaning, fail closed")
    func unsafeFileAndOptionsRefused() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let (authfile, _) = try mappingFile(box, key, user: user)
        #expect(try box.cli(["init", "--quiet"]).status == 0)
        #expect(chmod(authfile, 0o666) == 0)
        let service = try box.service("writable", pamU2FOptions(authfile: authfile))
        let writable = try key.login(box, service, user)
        #expect(writable.status == PAM.authInfoUnavailable, "whoever writes the file adds keys: \(writable)")
        #expect(chmod(authfile, 0o644) == 0)
        #expect(try key.login(box, service, user).status == PAM.success)

        for option in ["alwaysok", "manual", "authfile=u2f_keys"] {
            let base = pamU2FOptions(authfile: authfile).filter { !(option.hasPrefix("authfile=") && $0.hasPrefix("authfile=")) }
            let bad = try box.service("bad", base + [option])
            let result = try key.login(box, bad, user)
            #expect(result.status == PAM.serviceError, "\(option): \(result)")
        }
    }

    @Test("securotp import USER FILE takes USER's line of a mapping file; then the store's counter guards it, also through authfile=")
    func importMappingFile() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let (authfile, line) = try mappingFile(box, key, user: user)
        try box.write("daemon:" + (line.split(separator: ":", maxSplits: 1).last.map(String.init) ?? "") + "\n", to: box.path("other"), mode: 0o644)
        let none = try box.cli(["import", user, box.path("other")])
        #expect(none.status != 0 && none.stderr.contains("has no line for \(user)"), "\(none)")

        let imported = try box.cli(["import", user, authfile, "--format", "json"])
        try #require(imported.status == 0, "\(imported)")
        #expect(imported.stdout.contains("\"source\":\"mapping-file\""), "\(imported)")
        let service = try box.service("both", pamU2FOptions(authfile: authfile))
        let saved = try String(contentsOfFile: key.state, encoding: .utf8)
        #expect(try key.login(box, service, user).status == PAM.success)
        try box.write(saved, to: key.state, mode: 0o600) // a clone: the counter goes back
        let cloned = try key.login(box, service, user)
        #expect(cloned.status == PAM.authError, "the store's counter holds, though the file has the same credential: \(cloned)")
        #expect(try box.cli(["fido", "export", user, "--format", "json"]).stdout.contains("\"state\":\"cloned\""))
    }

    @Test("Old U2F-format lines import and log in (checked against appid=); a broken credential is refused naming file and line")
    func oldAndResidentLines() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let (_, line) = try mappingFile(box, key, user: user)
        let credential = try #require(try U2FCredential.parse(line: line).credentials.first)
        // pamu2fcfg 1.0's form of the same credential: web-safe base64 handle, hex of the 04||x||y point.
        let handle = credential.keyHandle.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let point = "04" + (Data(base64Encoded: credential.publicKey) ?? Data()).map { String(format: "%02x", $0) }.joined()
        let oldFile = box.path("old_mappings")
        try box.write("\(user):\(handle),\(point)\n", to: oldFile, mode: 0o644)
        let imported = try box.cli(["import", user, oldFile, "--format", "json"])
        try #require(imported.status == 0, "\(imported)")
        #expect(imported.stdout.contains("\"type\":\"es256\"") && imported.stdout.contains("+presence"), "\(imported)")
        let service = try box.service("old", ["appid=" + SoftFIDO.defaultOrigin, "origin=pam://elsewhere"])
        let login = try key.login(box, service, user)
        #expect(login.status == PAM.success, "an old-format credential is checked against appid=: \(login)")

        let brokenFile = box.path("broken_mappings")
        try box.write("# cut short\ndaemon:\(credential.keyHandle),\(credential.publicKey.prefix(20)),es256,+presence\n", to: brokenFile, mode: 0o644)
        let refused = try box.cli(["import", "daemon", brokenFile])
        #expect(refused.status != 0 && refused.stderr.contains(brokenFile + ":2: credential 1: "), "\(refused)")
    }
}

@Suite("FIDO: racing logins, lockout, securotp list", .serialized)
struct FidoCountingTests {
    private func imported(_ box: Sandbox, _ key: SoftKey, _ arguments: [String] = [], pin: String? = nil) throws -> String {
        let made = try key.pamu2fcfg("root", arguments, pinAnswer: pin)
        try #require(made.status == 0, "\(made)")
        let line = try #require(made.lines.first { $0.hasPrefix("root:") }, "\(made)")
        let result = try box.cli(["import", "root", line])
        try #require(result.status == 0, "\(result)")
        return line
    }

    @Test("Two logins racing with one key: both read the counter, at most one is accepted (the counter write is conditional)")
    func racingLogins() throws {
        let box = try Sandbox()
        let key = SoftKey(box).withPIN("1234")
        _ = try imported(box, key, ["-N"], pin: "1234")
        let service = try box.service("race")
        // Both logins read the stored counter before the PIN prompt; the second answers later,
        // so its assertion (a higher counter) comes after the first one's write.
        let environment = try key.environment()
        let first = try Run.start(box.pamCheck, ["--confdir", box.pamDirectory, service, "root", "!sleep 0.5; echo 1234"], environment: environment)
        let second = try Run.start(box.pamCheck, ["--confdir", box.pamDirectory, service, "root", "!sleep 2; echo 1234"], environment: environment)
        let results = [try first.wait(), try second.wait()]
        #expect(results.filter { $0.status == PAM.success }.count == 1, "\(results)")
        #expect(results.contains { $0.status == PAM.authError }, "\(results)")
        #expect(try key.login(box, service, "root", ["1234"]).status == PAM.success, "the credential still works afterwards")
    }

    @Test("FIDO failures count towards the lockout like wrong codes; a success clears the count; securotp list shows the credential")
    func failuresCount() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        _ = try imported(box, key)
        let service = try box.service("deny", ["deny=3", "unlock_time=0"])
        #expect(try key.refusing().login(box, service, "root").status == PAM.authError)
        #expect(try key.login(box, service, "root").status == PAM.success, "one failure, then a success clears the count")
        for _ in 0..<3 { #expect(try key.refusing().login(box, service, "root").status == PAM.authError) }
        let locked = try key.login(box, service, "root")
        #expect(locked.status == PAM.authError, "three refused touches in a row lock the user: \(locked)")
        #expect(try box.cli(["unlock", "root"]).status == 0)
        #expect(try key.login(box, service, "root").status == PAM.success)

        let list = try box.cli(["list", "root"])
        #expect(list.status == 0 && list.lines.contains { $0.contains("fido") && $0.contains("es256") && $0.contains("active") }, "\(list)")
        let all = try box.cli(["list", "--format", "json"])
        #expect(all.stdout.contains("\"kind\":\"fido\""), "\(all)")
    }
}

@Suite("FIDO: EdDSA credentials", .serialized)
struct FidoEdDSATests {
    @Test("securotp fido enroll --type eddsa makes an Ed25519 credential; the module checks its signature and logs in")
    func eddsaLogin() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let enrolled = try key.run(box.securotp, ["--state-dir", box.state, "fido", "enroll", "root", "--type", "eddsa", "--format", "json"])
        try #require(enrolled.status == 0, "\(enrolled)")
        #expect(enrolled.stdout.contains("\"type\":\"eddsa\""), "\(enrolled)")
        let service = try box.service("eddsa")
        let login = try key.login(box, service, "root")
        #expect(login.status == PAM.success, "\(login)")
        #expect(try key.login(box, service, "root").status == PAM.success, "the counter rose")
        #expect(try key.refusing().login(box, service, "root").status == PAM.authError)
        #expect(try SoftKey(box, name: "other.state").login(box, service, "root").status == PAM.authError)
        let es384 = try key.run(box.securotp, ["--state-dir", box.state, "fido", "enroll", "root", "--type", "es384"])
        #expect(es384.status == 64 && es384.stderr.contains("es256, eddsa or rs256"), "\(es384)")
    }
}

@Suite("FIDO: securotp import --all, a whole pam_u2f mapping file", .serialized)
struct FidoImportAllTests {
    @Test("--all imports every user's last line in one transaction; a broken line or a credential already held imports nothing")
    func importAll() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let root = try #require(try key.pamu2fcfg("root").lines.first { $0.hasPrefix("root:") })
        let older = try #require(try key.pamu2fcfg("daemon").lines.first { $0.hasPrefix("daemon:") })
        let daemon = try #require(try key.pamu2fcfg("daemon", ["-r", "-t", "rs256"]).lines.first { $0.hasPrefix("daemon:") })
        let file = box.path("u2f_mappings")
        try box.write("# site-wide\n\(root)\n\(older)\n\n\(daemon)\n", to: file, mode: 0o644)

        let broken = box.path("broken_mappings")
        try box.write("\(root)\nbin:AAAA,AAAA,es256,+presence\n", to: broken, mode: 0o644)
        let refused = try box.cli(["import", "--all", broken])
        #expect(refused.status == 65 && refused.stderr.contains(broken + ":2: credential 1: "), "\(refused)")
        #expect(try box.cli(["fido", "export", "root"]).status != 0, "nothing imported: \(refused)")

        let imported = try box.cli(["import", "--all", file, "--format", "json"])
        try #require(imported.status == 0, "\(imported)")
        let credentials = try #require(try JSONSerialization.jsonObject(with: Data(imported.stdout.utf8)) as? [[String: Any]])
        #expect(credentials.map { $0["user"] as? String } == ["root", "daemon"], "daemon's last line only: \(imported)")
        #expect(credentials.last?["type"] as? String == "rs256" && credentials.last?["resident"] as? Bool == true)
        #expect(try box.cli(["fido", "export", "daemon"]).stdout.hasPrefix("daemon:*,"))
        #expect(try key.login(box, try box.service("all"), "root").status == PAM.success)

        // root's credential is there now: the whole second run adds nothing, bin's included.
        try box.write("bin:\(older.dropFirst("daemon:".count))\n\(root)\n", to: broken, mode: 0o644)
        let again = try box.cli(["import", "--all", broken])
        #expect(again.status != 0 && again.stderr.contains("already has this FIDO credential"), "\(again)")
        #expect(try box.cli(["fido", "export", "bin"]).status != 0, "all or nothing")
        let mixed = try box.cli(["import", "root", file, "--all", file])
        #expect(mixed.status == 64, "\(mixed)")
    }
}
