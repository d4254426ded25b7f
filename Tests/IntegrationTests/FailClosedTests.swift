// Fail closed: bad configuration, missing store and loose file permissions never let anyone in,
// and the CLI names the file to fix.
import Glibc
import Testing

@Suite("Fail closed: configuration errors, missing store, file permissions")
struct FailClosedTests {
    @Test("An unknown key in securotp.conf: the module returns PAM_SERVICE_ERR, the CLI exits 78 naming file:line")
    func unknownConfigKey() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service()
        try box.writeConfig("# settings for the integration test\nwindow = 1\nbogus_key = 1\n")

        let login = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(login.status == PAM.serviceError, "\(login)")
        #expect(login.prompts.isEmpty, "\(login)")

        let cli = try box.cli(["list", "root"])
        #expect(cli.status == 78, "\(cli)")
        #expect(cli.stderrLines.count == 1, "\(cli)")
        #expect(cli.stderr.contains(box.state + "/securotp.conf:3"), "the message must name the file and line: \(cli)")
        #expect(cli.stderr.contains("bogus_key"), "\(cli)")
    }

    @Test("Bad module arguments are PAM_SERVICE_ERR, never a login", arguments: [
        ["window=abc"], ["deny=-1"], ["hotp_lookahead=1000"], ["no_such_option"], ["use_first_pass", "forward_pass"], ["state_dir=relative/path"],
    ])
    func badModuleArguments(_ arguments: [String]) throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("bad", arguments)
        let login = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(login.status == PAM.serviceError, "\(arguments): \(login)")
        #expect(login.prompts.isEmpty, "\(login)")
    }

    @Test("A bad value in securotp.conf is PAM_SERVICE_ERR")
    func badConfigValue() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service()
        try box.writeConfig("deny = lots\n")
        let login = try box.login(service, "root", [try Oath.hotp(token.secret, counter: 0)])
        #expect(login.status == PAM.serviceError, "\(login)")
    }

    @Test("No store at state_dir: PAM_AUTHINFO_UNAVAIL without a prompt")
    func missingStore() throws {
        let box = try Sandbox()
        let service = try box.service("missing", stateDirectory: box.path("never-created"))
        let login = try box.login(service, "root", ["123456"])
        #expect(login.status == PAM.authInfoUnavailable, "\(login)")
        #expect(login.prompts.isEmpty, "\(login)")
    }

    @Test("A key file or database others can read: module PAM_AUTHINFO_UNAVAIL, CLI exit 77 naming the file",
          arguments: ["securotp.key", "securotp.db"])
    func loosePermissions(_ file: String) throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service()
        let path = box.state + "/" + file
        #expect(try box.mode(of: box.state) == 0o700, "the CLI creates the state directory 0700")
        #expect(try box.mode(of: path) == 0o600, "\(file) is created owner-only")
        let code = try Oath.hotp(token.secret, counter: 0)

        try #require(chmod(path, 0o644) == 0)
        let login = try box.login(service, "root", [code])
        #expect(login.status == PAM.authInfoUnavailable, "\(file) mode 0644: \(login)")
        #expect(login.prompts.isEmpty, "\(login)")

        for command in [["list", "root"], ["enroll", "root", "--format", "json"], ["unlock", "root"]] {
            let cli = try box.cli(command)
            #expect(cli.status == 77, "\(command): \(cli)")
            #expect(cli.stderrLines.count == 1, "\(command): \(cli)")
            #expect(cli.stderr.contains(path), "\(command): the message must name \(path): \(cli)")
        }

        // Fixed permissions: the same code (never checked while refused) logs in.
        try #require(chmod(path, 0o600) == 0)
        let fixed = try box.login(service, "root", [code])
        #expect(fixed.status == PAM.success, "\(fixed)")
    }
}
