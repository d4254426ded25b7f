import Foundation
import SecurOTPServer
import SecurOTPService
import Testing

@Suite("securotpd configuration")
struct ConfigurationTests {
    @Test("Every key docs/validator.md lists is a key securotpd reads from the environment too (SECUROTPD_<KEY>)")
    func documentedKeysAreEnvironmentKeys() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/validator.md"), encoding: .utf8)
        let table = text.components(separatedBy: "| key | flag |").dropFirst().first?.components(separatedBy: "\n\n").first ?? ""
        // The first cell of each row: one key or several (`device_pin_min`, `device_pin_max`).
        let documented = table.split(separator: "\n").compactMap { row -> [String]? in
            guard row.hasPrefix("| `") else { return nil }
            let cell = row.dropFirst(2).prefix { $0 != "|" }
            return cell.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }
        }.flatMap { $0 }
        #expect(documented.count > 30, "\(documented)")
        let missing = documented.filter { !DaemonConfiguration.keys.contains($0) }
        #expect(missing.isEmpty, "documented, but SECUROTPD_<KEY> is not read for: \(missing)")
        var configuration = DaemonConfiguration()
        try configuration.applyEnvironment(["SECUROTPD_HEALTH_TIMEOUT": "5"])
        #expect(configuration.healthTimeoutSeconds == 5)
    }

    static func write(_ text: String, mode: Int = 0o600) throws -> (directory: String, path: String) {
        let directory = try ValidatorFixture.temporaryDirectory()
        let path = directory + "/securotpd.conf"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        return (directory, path)
    }

    @Test("File, then environment, then flags; store and policy keys shared with the module")
    func precedence() throws {
        let (directory, path) = try Self.write("""
            # comment
            listen = 127.0.0.1:9000
            deny = 7
            rate_limit_user = 12
            database = /var/tmp/x.db
            """)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = DaemonConfiguration()
        try configuration.load(path: path, required: true)
        #expect(configuration.listen == .tcp(host: "127.0.0.1", port: 9000))
        #expect(configuration.store.policy.deny == 7 && configuration.userVerificationsPerMinute == 12)
        #expect(configuration.store.paths.database == "/var/tmp/x.db" && configuration.postgresURL == nil)
        try configuration.applyEnvironment(["SECUROTPD_LISTEN": "[::1]:9001", "SECUROTPD_DATABASE": "postgres://u:p@db/securotp"])
        #expect(configuration.listen == .tcp(host: "::1", port: 9001) && configuration.postgresURL == "postgres://u:p@db/securotp")
        try configuration.apply(key: "listen", value: "unix:/run/securotpd.sock", origin: "--listen")
        #expect(configuration.listen == .unix(path: "/run/securotpd.sock"))
        try configuration.validate()
    }

    @Test("Errors name where the bad value came from", arguments: [
        ("colour = blue\n", "securotpd.conf:1: colour: unknown setting"),
        ("\n\ndeny = many\n", "securotpd.conf:3: deny"),
        ("listen = nowhere\n", "securotpd.conf:1: listen: expected HOST:PORT"),
        ("nullok = yes\n", "securotpd.conf:1: nullok: unknown setting"),
        ("just text\n", "securotpd.conf:1: expected key = value"),
        ("deny = 3\nwindow = 1\ndeny = 4\n", "securotpd.conf:3: deny was already given at line 1"),
    ])
    func errors(text: String, expected: String) throws {
        let (directory, path) = try Self.write(text)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = DaemonConfiguration()
        let error = #expect(throws: ServiceError.self) { try configuration.load(path: path, required: true) }
        #expect(error?.code == .config && error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    @Test("Refused: plain HTTP off loopback, half a TLS pair, a group-readable file, a missing named file")
    func unsafe() throws {
        var open = DaemonConfiguration()
        open.listen = .tcp(host: "0.0.0.0", port: 8443)
        #expect(throws: ServiceError.self) { try open.validate() }
        var half = DaemonConfiguration()
        half.tlsCertificate = "/etc/ssl/certs/ca-certificates.crt"
        #expect(throws: ServiceError.self) { try half.validate() }

        let (directory, path) = try Self.write("deny = 3\n", mode: 0o640)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var readable = DaemonConfiguration()
        let error = #expect(throws: ServiceError.self) { try readable.load(path: path, required: true) }
        #expect(error?.message.contains("chmod 600") == true, "\(error?.message ?? "")")
        var missing = DaemonConfiguration()
        #expect(throws: ServiceError.self) { try missing.load(path: directory + "/absent.conf", required: true) }
        try missing.load(path: directory + "/absent.conf", required: false)
    }
}
