// securotp-authenticator as users and scripts see it: where the store goes, binding to the
// machine and the user, exit codes and one-line errors, PINs on standard input, reset, help.
import Foundation
import Glibc
import SecurOTPCore
import Testing

@Suite("securotp-authenticator: store location, binding, errors and exit codes")
struct AuthenticatorCLITests {
    static let uri = "otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP&issuer=ACME"

    /// A machine-ID file for "another machine".
    func otherMachineID(_ box: Sandbox) throws -> String {
        let path = box.path("other-machine-id")
        try box.write("00112233445566778899aabbccddeeff\n", to: path)
        return path
    }

    @Test("Default store: $XDG_DATA_HOME/securotp, else ~/.local/share/securotp; directory 0700, files 0600")
    func defaultLocation() throws {
        let box = try Sandbox()
        let binary = try Binaries.authenticator()
        let clean = AuthenticatorRunner.cleanEnvironment
        let xdg = try Run.run(binary, ["binding-id"], environment: clean.merging(["XDG_DATA_HOME": box.path("xdg"), "HOME": box.path("home")]) { _, new in new })
        #expect(xdg.status == 0, "\(xdg)")
        #expect(try box.mode(of: box.path("xdg/securotp")) == 0o700)
        #expect(try box.mode(of: box.path("xdg/securotp/authenticator.key")) == 0o600)
        #expect(try box.mode(of: box.path("xdg/securotp/authenticator.db")) == 0o600)

        let home = try Run.run(binary, ["binding-id"], environment: clean.merging(["XDG_DATA_HOME": "", "HOME": box.path("home")]) { _, new in new })
        #expect(home.status == 0, "\(home)")
        #expect(FileManager.default.fileExists(atPath: box.path("home/.local/share/securotp/authenticator.key")))
        #expect(home.stdout != xdg.stdout, "two stores, two binding IDs")
    }

    @Test("binding-id: 24 lowercase hex, stable; the store refuses another machine ID with a clear message (exit 77)")
    func bindingAndMachine() throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        let first = try authenticator.run(["binding-id"])
        let id = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(first.status == 0 && id.count == 24 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(first)")
        #expect(try authenticator.run(["binding-id"]).stdout == first.stdout, "stable")
        #expect(try authenticator.json(["binding-id"]) as? [String: String] == ["binding_id": id])
        _ = try authenticator.importOne(Self.uri)

        let elsewhere = ["SECUROTP_MACHINE_ID_FILE": try otherMachineID(box)]
        for command in [["list"], ["code"], ["binding-id"], ["import", "otpauth://totp/X:y?secret=JBSWY3DPEHPK3PXP"]] {
            let refused = try authenticator.run(command, environment: elsewhere)
            #expect(refused.status == 77, "\(command): \(refused)")
            #expect(refused.stderrLines.count == 1 && refused.stderr.contains("was made for another user or machine"), "\(refused)")
            #expect(refused.stdout.isEmpty, "no codes, no listing: \(refused)")
        }
        // Another machine's own store has its own binding ID.
        let theirs = try AuthenticatorRunner(box, name: "their-store").run(["binding-id"], environment: elsewhere)
        #expect(theirs.status == 0 && theirs.stdout != first.stdout, "\(theirs)")
    }

    @Test("A store copied to another user does not open for them (exit 77), run as nobody", .enabled(if: geteuid() == 0, "needs root to run as another user"))
    func anotherUser() throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        _ = try authenticator.importOne(Self.uri)
        // nobody must be able to reach the copy: the sandbox is traversable, the copy theirs.
        #expect(chmod(box.root, 0o711) == 0)
        let copy = box.path("copy")
        for command in [["/bin/cp", "-a", authenticator.directory, copy], ["/bin/chown", "-R", "65534:65534", copy]] {
            let result = try Run.run(command[0], Array(command.dropFirst()))
            try #require(result.status == 0, "\(result)")
        }
        let asNobody = try Run.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", authenticator.binary, "--data-dir", copy, "code"],
                                   environment: AuthenticatorRunner.cleanEnvironment)
        #expect(asNobody.status == 77, "\(asNobody)")
        #expect(asNobody.stderr.contains("was made for another user or machine") && asNobody.stderr.contains("you are uid 65534"), "\(asNobody)")
        // And root does not open nobody's store either.
        let asRoot = try AuthenticatorRunner(box, name: "copy").run(["list"])
        #expect(asRoot.status == 77 && asRoot.stderr.contains("owned by uid 65534, not by you"), "\(asRoot)")
    }

    @Test("Errors: one line on stderr with the sysexits code a script can act on")
    func exitCodes() throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        let noStore = try authenticator.run(["code"])
        #expect(noStore.status == 66 && noStore.stderr.contains("import one with"), "\(noStore)")
        #expect(try authenticator.run(["list"]).status == 0, "an empty list is no error")
        #expect(!FileManager.default.fileExists(atPath: authenticator.directory), "list and code create nothing")

        let missingFile = try authenticator.run(["import", box.path("absent.sdtid")])
        #expect(missingFile.status == 66, "\(missingFile)")
        let first = try authenticator.importOne(Self.uri)
        let second = try authenticator.importOne("otpauth://hotp/ACME:alice?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&counter=0")
        let ambiguous = try authenticator.run(["code"])
        #expect(ambiguous.status == 64 && ambiguous.stderr.contains(first) && ambiguous.stderr.contains(second), "\(ambiguous)")
        #expect(try authenticator.run(["code", "4242"]).status == 67)
        #expect(try authenticator.run(["delete", "4242"]).status == 67)
        #expect(try authenticator.run(["nickname", first, String(repeating: "n", count: 33)]).status == 65)
        let badPassword = try authenticator.run(["import", try SecurIDVectors.export("B-v2-pass"), "--password", "hunter2-not-it"])
        #expect(badPassword.status == 77 && badPassword.stderrLines.count == 1, "\(badPassword)")
        let usage = try authenticator.run(["import", "x", "--password", "a", "--password-file", "b"])
        #expect(usage.status == 64, "\(usage)")

        #expect(chmod(authenticator.directory + "/authenticator.key", 0o644) == 0)
        let loose = try authenticator.run(["list"])
        #expect(loose.status == 77 && loose.stderr.contains("fix: chmod 600 \(authenticator.directory)/authenticator.key"), "\(loose)")
        for result in [noStore, missingFile, ambiguous, badPassword, loose] {
            #expect(result.stderrLines.count == 1 && result.stderr.hasPrefix("securotp-authenticator: "), "\(result)")
        }
    }

    @Test("list, nickname and delete as a user sees them; JSON has every field")
    func manageTokens() throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        let serial = try authenticator.importOne(Self.uri)
        let securID = try authenticator.importOne(try SecurIDVectors.export("A-v2"), ["--nickname", "vpn"])
        let renamed = try authenticator.run(["nickname", serial, "work mail"])
        #expect(renamed.status == 0, "\(renamed)")
        let list = try authenticator.run(["list"])
        #expect(list.lines.first?.hasPrefix("SERIAL") == true && list.stdout.contains("work mail") && list.stdout.contains("pinpad"), "\(list)")
        let tokens = try #require(try authenticator.json(["list"]) as? [[String: Any]])
        #expect(tokens.count == 2)
        let totp = try #require(tokens.first { $0["serial"] as? String == serial })
        #expect(totp["nickname"] as? String == "work mail" && totp["issuer"] as? String == "ACME" && totp["kind"] as? String == "totp")
        #expect(totp["digits"] as? Int == 6 && totp["period"] as? Int == 30 && totp["counter"] is NSNull && totp["expires"] is NSNull)
        let token = try #require(tokens.first { $0["serial"] as? String == securID })
        #expect(token["kind"] as? String == "securid" && token["pin_mode"] as? String == "added" && token["nickname"] as? String == "vpn")
        #expect(token["expires"] as? String == "2036-01-01T00:00:00Z")

        #expect(try authenticator.run(["delete", serial]).status == 0)
        #expect((try authenticator.json(["list"]) as? [[String: Any]])?.count == 1)
    }

    @Test("code: a PIN on standard input is added into the SecurID code, as stoken adds it")
    func pinFromStandardInput() async throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        let ctf = try SecurIDVectors.export("A-v2")
        _ = try authenticator.importOne(ctf)
        try await Clock.waitForFreshStep(margin: 5)
        let (result, oracle) = try Clock.inOneStep { now in
            (try authenticator.run(["code", "--format", "json"], input: "97531\n"),
             [try SecurIDVectors.stoken(ctf, at: now, pin: "97531"), try SecurIDVectors.stoken(ctf, at: now + 30, pin: "97531")])
        }
        #expect(result.status == 0, "\(result)")
        let codes = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(codes["current"] as? String == oracle[0], "\(codes)")
        #expect(codes["next"] as? String == oracle[1], "\(codes)")
        #expect(!result.stdout.contains("97531") && !result.stderr.contains("97531"), "the PIN is never printed")

        let none = try authenticator.run(["code"], input: "")
        #expect(none.status == 65 && none.stderr.contains("no PIN"), "\(none)")
    }

    @Test("code on a terminal: the PIN prompt does not echo the PIN; the passcode is stoken's")
    func pinOnTerminal() async throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        let ctf = try SecurIDVectors.export("A-v2")
        _ = try authenticator.importOne(ctf)
        // A pseudo-terminal driven by Python's pty module: waits for the prompt, then types.
        let driver = """
            import os, pty, sys
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], sys.argv[1:])
            out = b""
            while b"PIN for token" not in out:
                chunk = os.read(fd, 1024)
                if not chunk: break
                out += chunk
            os.write(fd, b"97531\\n")
            while True:
                try: chunk = os.read(fd, 1024)
                except OSError: break
                if not chunk: break
                out += chunk
            os.waitpid(pid, 0)
            sys.stdout.write(out.decode())
            """
        try await Clock.waitForFreshStep(margin: 5)
        let (result, oracle) = try Clock.inOneStep { now in
            (try Run.run("/usr/bin/python3", ["-c", driver, authenticator.binary, "--data-dir", authenticator.directory, "code"],
                         environment: AuthenticatorRunner.cleanEnvironment),
             try SecurIDVectors.stoken(ctf, at: now, pin: "97531"))
        }
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("PIN for token 987654321098: "), "\(result)")
        #expect(!result.stdout.contains("97531"), "the PIN was echoed: \(result)")
        #expect(result.stdout.contains("current  " + oracle), "\(result)")
    }

    @Test("reset: refused without --yes off a terminal; with --yes, no tokens and a new binding ID")
    func reset() throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        _ = try authenticator.importOne(Self.uri)
        let before = try authenticator.run(["binding-id"]).stdout
        let unconfirmed = try authenticator.run(["reset"])
        #expect(unconfirmed.status == 64 && unconfirmed.stderr.contains("--yes"), "\(unconfirmed)")
        #expect((try authenticator.json(["list"]) as? [Any])?.count == 1, "nothing changed")
        let confirmed = try authenticator.run(["reset", "--yes"])
        #expect(confirmed.status == 0 && confirmed.stdout.contains("Removed 1 token"), "\(confirmed)")
        #expect((try authenticator.json(["list"]) as? [Any])?.isEmpty == true)
        #expect(try authenticator.run(["binding-id"]).stdout != before)
    }

    @Test("--help teaches: every command listed, examples in each; version is the library's")
    func helpAndVersion() throws {
        let box = try Sandbox()
        let authenticator = try AuthenticatorRunner(box)
        let help = try Run.run(authenticator.binary, ["--help"])
        #expect(help.status == 0)
        for command in ["import", "list", "code", "nickname", "delete", "reset", "binding-id", "version"] {
            #expect(help.stdout.contains("  \(command)"), "\(command) missing from --help")
            let own = try Run.run(authenticator.binary, [command, "--help"])
            #expect(own.status == 0 && own.stdout.contains("Example"), "\(command) --help has no example:\n\(own)")
        }
        let version = try Run.run(authenticator.binary, ["version"])
        #expect(version.status == 0 && version.stdout == SecurOTPVersion.string + "\n", "\(version)")
        let printed = try Run.run(authenticator.binary, ["version", "--format", "json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? [String: Any], "\(printed)")
        #expect(json["version"] as? String == SecurOTPVersion.string && json["store_format"] as? Int == 3, "\(json)")
    }
}
