// RS256 and resident credentials end to end with the software key (docs/fido.md), with Debian's
// pamu2fcfg and pam_u2f.so as the independent party both ways, and the user's side of enrolment:
// securotp-authenticator fido register prints the line an admin imports.
import Foundation
import Testing

/// The line a command printed for `user` (`user:KH,PK,type,attributes`).
private func u2fLine(_ result: ProcessResult, user: String) throws -> String {
    try #require(result.status == 0, "\(result)")
    return try #require(result.lines.first { $0.hasPrefix(user + ":") }, "\(result)")
}

/// `auth required pam_u2f.so authfile=FILE cue` as a service of the sandbox, FILE holding `line`.
private func pamU2FService(_ box: Sandbox, line: String, name: String = "u2f") throws -> String {
    let authfile = box.path(name + "_keys")
    try box.write(line + "\n", to: authfile, mode: 0o600)
    try box.write("auth required \(try SoftFIDO.pamU2F()) authfile=\(authfile) cue\n", to: box.pamDirectory + "/" + name)
    return name
}

@Suite("FIDO: RS256 credentials", .serialized)
struct FidoRS256Tests {
    @Test("securotp fido enroll --type rs256: the module checks the RSA signature and logs in; the exported line logs in through pam_u2f.so")
    func enrollRS256() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let enrolled = try key.run(box.securotp, ["--state-dir", box.state, "fido", "enroll", user, "--type", "rs256", "--format", "json"])
        try #require(enrolled.status == 0, "\(enrolled)")
        #expect(enrolled.stdout.contains("\"type\":\"rs256\""), "\(enrolled)")
        let service = try box.service("rs256")
        let login = try key.login(box, service, user)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.infos == [FidoLoginTests.cue] && login.prompts.isEmpty, "\(login)")
        #expect(try key.login(box, service, user).status == PAM.success, "the counter rose")
        #expect(try key.refusing().login(box, service, user).status == PAM.authError)
        #expect(try SoftKey(box, name: "other.state").login(box, service, user).status == PAM.authError)

        let line = try u2fLine(try box.cli(["fido", "export", user]), user: user)
        let credential = try #require(try U2FCredential.parse(line: line).credentials.first)
        #expect(credential.type == "rs256" && Data(base64Encoded: credential.publicKey)?.count == 259, "\(line)")
        let viaU2F = try key.login(box, try pamU2FService(box, line: line), user)
        #expect(viaU2F.status == PAM.success, "pam_u2f verifies the RS256 credential securotp made: \(viaU2F)")
    }

    @Test("pamu2fcfg -t rs256's line imports and logs in through pam_securotp; the same line with the modulus altered does not")
    func pamu2fcfgRS256() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let line = try u2fLine(try key.pamu2fcfg("root", ["-t", "rs256"]), user: "root")
        let imported = try box.cli(["import", "root", line, "--format", "json"])
        try #require(imported.status == 0, "\(imported)")
        let service = try box.service("rs256")
        let login = try key.login(box, service, "root")
        #expect(login.status == PAM.success, "\(login)")

        // The same credential with one bit of its modulus changed, in a fresh store.
        let credential = try #require(try U2FCredential.parse(line: line).credentials.first)
        var modulus = [UInt8](try #require(Data(base64Encoded: credential.publicKey)))
        modulus[17] ^= 0x04
        let tampered = "root:\(credential.keyHandle),\(Data(modulus).base64EncodedString()),rs256,\(credential.attributes)"
        let other = try Sandbox()
        try #require(try other.cli(["import", "root", tampered]).status == 0)
        let refused = try key.login(other, try other.service("tampered"), "root")
        #expect(refused.status == PAM.authError, "a public key that is not the key's does not verify: \(refused)")
    }
}

@Suite("FIDO: resident (discoverable) credentials", .serialized)
struct FidoResidentTests {
    @Test("securotp fido enroll --resident: the line carries *, the key finds the credential itself; pam_securotp and pam_u2f.so log in")
    func enrollResident() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let user = SoftFIDO.currentUser
        let enrolled = try key.run(box.securotp, ["--state-dir", box.state, "fido", "enroll", user, "--resident", "--format", "json"])
        try #require(enrolled.status == 0, "\(enrolled)")
        #expect(enrolled.stdout.contains("\"resident\":true"), "\(enrolled)")
        let line = try u2fLine(try box.cli(["fido", "export", user]), user: user)
        let credential = try #require(try U2FCredential.parse(line: line).credentials.first)
        #expect(credential.keyHandle == "*" && credential.type == "es256" && credential.attributes == "+presence", "\(line)")
        #expect(try String(contentsOfFile: key.state, encoding: .utf8).contains("resident "), "kept on the key")

        let service = try box.service("resident")
        let login = try key.login(box, service, user)
        #expect(login.status == PAM.success, "\(login)")
        #expect(try key.login(box, service, user).status == PAM.success, "the counter rose")
        #expect(try key.refusing().login(box, service, user).status == PAM.authError)
        #expect(try SoftKey(box, name: "other.state").login(box, service, user).status == PAM.authError, "another key holds nothing")
        let viaU2F = try key.login(box, try pamU2FService(box, line: line), user)
        #expect(viaU2F.status == PAM.success, "pam_u2f takes the exported * line: \(viaU2F)")
        let again = try box.cli(["import", user, line])
        #expect(again.status != 0 && again.stderr.contains("already has this FIDO credential"), "\(again)")
    }

    @Test("pamu2fcfg -r -t rs256's * line imports and logs in; from authfile= too; with another user's newer credential on the key, the user's is picked")
    func pamu2fcfgResident() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let line = try u2fLine(try key.pamu2fcfg("root", ["-r", "-t", "rs256"]), user: "root")
        #expect(line.hasPrefix("root:*,"), "\(line)")
        let imported = try box.cli(["import", "root", line])
        try #require(imported.status == 0, "\(imported)")
        let service = try box.service("resident")
        #expect(try key.login(box, service, "root").status == PAM.success)

        // A mapping file's * line is used as it is (no store row).
        let fileBox = try Sandbox()
        #expect(try fileBox.cli(["init", "--quiet"]).status == 0)
        let authfile = fileBox.path("u2f_mappings")
        try fileBox.write(line + "\n", to: authfile, mode: 0o644)
        let fromFile = try key.login(fileBox, try fileBox.service("file", ["authfile=" + authfile]), "root")
        #expect(fromFile.status == PAM.success, "\(fromFile)")

        // Another user's resident credential made later on the same key for the same origin:
        // the key answers with it first and with root's after it (getNextAssertion), from one
        // touch; the module takes the one root's public key verifies. pam_u2f 1.1.0 checks only
        // the first answer, so it refuses root here (docs/fido.md).
        let daemonLine = try u2fLine(try key.pamu2fcfg("daemon", ["-r"]), user: "daemon")
        let picked = try key.login(box, service, "root")
        #expect(picked.status == PAM.success, "\(picked)")
        #expect(try key.login(box, try pamU2FService(box, line: line), "root").status == PAM.authError, "pam_u2f 1.1.0: the first answer only")
        #expect(try box.cli(["import", "daemon", daemonLine]).status == 0)
        #expect(try key.login(box, service, "daemon").status == PAM.success, "the newest credential, the key's first answer")
        #expect(try key.refusing().login(box, service, "root").status == PAM.authError)
    }
}

@Suite("FIDO: securotp-authenticator fido register", .serialized)
struct FidoRegisterTests {
    @Test("The user registers the attached key: one pam_u2f line on stdout, which the admin imports; the user logs in")
    func registerImportLogin() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let authenticator = try Binaries.authenticator()
        let registered = try key.run(authenticator, ["fido", "register", "--user", "root"])
        try #require(registered.status == 0, "\(registered)")
        #expect(registered.lines.count == 1, "exactly one line on stdout: \(registered)")
        let line = try u2fLine(registered, user: "root")
        let credential = try #require(try U2FCredential.parse(line: line).credentials.first)
        #expect(credential.type == "es256" && credential.attributes == "+presence" && credential.keyHandle != "*", "\(line)")
        #expect(registered.stderr.contains("securotp import root"), "\(registered)")

        #expect(try box.cli(["import", "root", line]).status == 0)
        let service = try box.service("registered")
        let login = try key.login(box, service, "root")
        #expect(login.status == PAM.success, "\(login)")

        let resident = try key.run(authenticator, ["fido", "register", "--user", "daemon", "--type", "rs256", "--resident", "--origin", "pam://elsewhere"])
        let residentLine = try u2fLine(resident, user: "daemon")
        #expect(residentLine.hasPrefix("daemon:*,") && residentLine.contains(",rs256,+presence"), "\(residentLine)")
        let refused = try key.refusing().run(authenticator, ["fido", "register", "--user", "root"])
        #expect(refused.status == 65 && refused.stdout.isEmpty && refused.stderr.contains("not touched"), "\(refused)")
        let badType = try key.run(authenticator, ["fido", "register", "--type", "es384"])
        #expect(badType.status == 64, "\(badType)")
        let badUser = try key.run(authenticator, ["fido", "register", "--user", "no body"])
        #expect(badUser.status == 64 && badUser.stderr.contains("--user"), "\(badUser)")
    }
}
