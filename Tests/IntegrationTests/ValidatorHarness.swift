// Remote mode's world: a real securotpd (the release binary) on 127.0.0.1 port 0 with TLS from
// a test PKI the openssl CLI makes at test time (no key is ever committed), host credentials
// from `securotp host add`, and PAM services whose module line points at the validator.
import Foundation
import Glibc
import Testing

extension Tools {
    static func openssl() throws -> String { try require("/usr/bin/openssl", package: "openssl") }
    /// nss_wrapper: host names from a file of the test's (NSS_WRAPPER_HOSTS), /etc/hosts untouched.
    static func nssWrapper() throws -> String {
        let found = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"].map { $0 + "/libnss_wrapper.so" }
            .first { FileManager.default.fileExists(atPath: $0) }
        guard let found else { throw HarnessError("libnss_wrapper.so not found: install the Debian package libnss-wrapper (scripts/install-deps.sh test)") }
        return found
    }
}

/// A CA, a server certificate for 127.0.0.1, localhost and dualstack.test (a name the tests give
/// two addresses with nss_wrapper), a client certificate (mutual TLS),
/// a server certificate for another name, and an unrelated CA — all P-256, valid for two days.
struct TestPKI {
    let caFile: String
    let serverCertificate: String
    let serverKey: String
    let clientCertificate: String
    let clientKey: String
    /// Signed by the CA, but for validator.example only: the host name check must fail.
    let wrongNameCertificate: String
    let wrongNameKey: String
    /// A CA that signed none of these.
    let otherCAFile: String

    init(in box: Sandbox) throws {
        let directory = box.path("pki")
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { throw HarnessError("cannot create \(directory)") }
        func file(_ name: String) -> String { directory + "/" + name }
        caFile = file("ca.pem")
        otherCAFile = file("other-ca.pem")
        try Self.makeCA(key: file("ca.key"), certificate: caFile, name: "securotp test CA")
        try Self.makeCA(key: file("other-ca.key"), certificate: otherCAFile, name: "some other CA")
        (serverCertificate, serverKey) = (file("server.pem"), file("server.key"))
        try Self.makeLeaf(box, key: serverKey, certificate: serverCertificate, ca: caFile, caKey: file("ca.key"), serial: 2,
                          extensions: "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:dualstack.test\nextendedKeyUsage=serverAuth\n")
        (clientCertificate, clientKey) = (file("client.pem"), file("client.key"))
        try Self.makeLeaf(box, key: clientKey, certificate: clientCertificate, ca: caFile, caKey: file("ca.key"), serial: 3,
                          extensions: "extendedKeyUsage=clientAuth\n")
        (wrongNameCertificate, wrongNameKey) = (file("wrong-name.pem"), file("wrong-name.key"))
        try Self.makeLeaf(box, key: wrongNameKey, certificate: wrongNameCertificate, ca: caFile, caKey: file("ca.key"), serial: 4,
                          extensions: "subjectAltName=DNS:validator.example\nextendedKeyUsage=serverAuth\n")
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try Run.run(try Tools.openssl(), arguments)
        guard result.status == 0 else { throw HarnessError("openssl failed:\n\(result)") }
    }

    private static let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    private static func makeCA(key: String, certificate: String, name: String) throws {
        try openssl(["req", "-x509"] + newKey + ["-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=\(name)",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        guard chmod(key, 0o600) == 0 else { throw HarnessError("chmod \(key)") }
    }

    private static func makeLeaf(_ box: Sandbox, key: String, certificate: String, ca: String, caKey: String, serial: Int, extensions: String) throws {
        let request = certificate + ".csr"
        let extensionFile = certificate + ".ext"
        try openssl(["req", "-new"] + newKey + ["-keyout", key, "-out", request, "-subj", "/CN=securotp test \(serial)"])
        try box.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n" + extensions, to: extensionFile)
        try openssl(["x509", "-req", "-in", request, "-CA", ca, "-CAkey", caKey, "-set_serial", String(serial), "-days", "2",
                     "-extfile", extensionFile, "-out", certificate])
        guard chmod(key, 0o600) == 0 else { throw HarnessError("chmod \(key)") }
    }
}

/// A running securotpd on its own state directory, kept as long as its sandbox and stopped
/// (SIGTERM, then reaped) with it.
final class Validator {
    let child: Child
    /// "127.0.0.1:PORT" or "unix:/PATH", as securotpd logged it.
    let boundAddress: String
    let usesTLS: Bool

    /// The module's `validator=` value.
    var url: String {
        boundAddress.hasPrefix("unix:") ? boundAddress : (usesTLS ? "https://" : "http://") + boundAddress
    }

    var port: Int { Int(boundAddress.split(separator: ":").last ?? "") ?? 0 }

    /// Starts securotpd on `state` with securotpd.conf `settings` (key = value; rate limits per
    /// user off unless given, so tests can log in often). `certificate` nil: plain HTTP.
    init(_ box: Sandbox, state: String, settings: [String: String] = [:], pki: TestPKI?, certificate: (String, String)? = nil,
         clientCA: String? = nil, listen: String = "127.0.0.1:0") throws {
        let config = box.path("securotpd-\(UUID().uuidString.prefix(8)).conf")
        var lines = ["rate_limit_user": "0", "log_level": "info", "metrics_listen": "127.0.0.1:0"]
        lines.merge(settings) { _, new in new }
        try box.write(lines.map { "\($0.key) = \($0.value)" }.sorted().joined(separator: "\n") + "\n", to: config, mode: 0o600)
        var arguments = ["--config", config, "--state-dir", state, "--listen", listen]
        if let pki {
            let (cert, key) = certificate ?? (pki.serverCertificate, pki.serverKey)
            arguments += ["--tls-cert", cert, "--tls-key", key]
        }
        if let clientCA { arguments += ["--tls-client-ca", clientCA] }
        usesTLS = pki != nil
        child = try Run.start(try Binaries.securotpd(), arguments)
        // securotpd logs the address it bound: `msg="securotpd listening" listen=127.0.0.1:PORT`.
        let deadline = Date().addingTimeInterval(60)
        var found: String?
        while found == nil {
            let log = child.errorOutput
            if let line = log.split(separator: "\n").first(where: { $0.contains("securotpd listening") }),
               let field = line.split(separator: " ").first(where: { $0.hasPrefix("listen=") }) {
                found = String(field.dropFirst("listen=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                break
            }
            // A refused configuration ends securotpd with one "securotpd: ..." line.
            if Date() > deadline || log.hasPrefix("securotpd: ") || log.contains("\nsecurotpd: ") {
                kill(child.pid, SIGKILL)
                let result = try child.wait(timeout: 5)
                throw HarnessError("securotpd did not start listening:\n\(result)")
            }
            usleep(20_000)
        }
        boundAddress = found ?? ""
        box.keepAlive(self)
    }

    /// SIGTERM: a graceful stop; returns how the process ended (its log on stderr).
    func stop() throws -> ProcessResult {
        kill(child.pid, SIGTERM)
        return try child.wait(timeout: 30)
    }

    deinit {
        kill(child.pid, SIGTERM)
        _ = try? child.wait(timeout: 15)
    }
}

/// One remote-mode test's pieces: a sandbox, the validator's state directory, the PKI, and
/// a host credential from `securotp host add`.
final class RemoteWorld {
    let box: Sandbox
    let pki: TestPKI
    /// The validator's store (tokens are enrolled here).
    let validatorState: String
    /// The host credential file (0600).
    let credential: String
    /// The host side's state directory: never created — remote mode must not need a store.
    let hostState: String

    /// The validator's PostgreSQL database (`database =`), when the world runs on one; the
    /// validator's state directory then holds only the key file. Dropped with the world.
    let database: String?

    init(hostUsers: String? = nil, postgres: Bool = false) throws {
        box = try Sandbox()
        pki = try TestPKI(in: box)
        validatorState = box.path("validator")
        hostState = box.path("host")
        if postgres {
            let name = "securotp_it_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            try TestPostgres.sql("CREATE DATABASE \(name)")
            database = TestPostgres.url(database: name)
            // The key file the validator and securotp share (a local store made for the purpose).
            let made = try box.cli(["init"], stateDirectory: validatorState)
            guard made.status == 0 else { throw HarnessError("init failed:\n\(made)") }
        } else {
            database = nil
        }
        credential = try Self.addHost(box, state: validatorState, name: "web1", users: hostUsers,
                                      store: database.map { ["--database", $0] } ?? [])
    }

    deinit {
        if let database, let name = URLComponents(string: database)?.path.dropFirst() {
            try? TestPostgres.sql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }

    /// `securotp host add NAME --output FILE` on the validator's store; returns FILE.
    static func addHost(_ box: Sandbox, state: String, name: String, users: String? = nil, store: [String] = []) throws -> String {
        let file = box.path("\(name).cred")
        var arguments = store + ["host", "add", name, "--output", file]
        if let users { arguments += ["--users", users] }
        let result = try box.cli(arguments, stateDirectory: state)
        guard result.status == 0 else { throw HarnessError("host add failed:\n\(result)") }
        return file
    }

    func enroll(_ user: String, _ options: [String] = []) throws -> Enrollment {
        try box.enroll(user, options, stateDirectory: validatorState)
    }

    /// securotp on the validator's store (its PostgreSQL database when it has one).
    func cli(_ arguments: [String]) throws -> ProcessResult {
        try box.cli((database.map { ["--database", $0] } ?? []) + arguments, stateDirectory: validatorState)
    }

    func start(_ settings: [String: String] = [:], certificate: (String, String)? = nil, clientCA: String? = nil) throws -> Validator {
        let settings = database.map { url in settings.merging(["database": url]) { $1 } } ?? settings
        return try Validator(box, state: validatorState, settings: settings, pki: pki, certificate: certificate, clientCA: clientCA)
    }

    /// The module's remote-mode arguments for `validator` (TLS through the test CA).
    func arguments(_ url: String, credential: String? = nil, caFile: String? = nil, _ more: [String] = []) -> [String] {
        ["validator=" + url, "host_credential=" + (credential ?? self.credential), "ca_file=" + (caFile ?? pki.caFile)] + more
    }

    /// A PAM service whose module asks `validator`.
    @discardableResult
    func service(_ name: String, _ validator: Validator, _ more: [String] = [], control: String = "required", then extra: [String] = []) throws -> String {
        try box.service(name, arguments(validator.url, more), control: control, stateDirectory: hostState, then: extra)
    }

    /// The same with PAM_IGNORE observable (Sandbox.ignoreProbe).
    @discardableResult
    func ignoreProbe(_ name: String, _ arguments: [String]) throws -> String {
        try box.service(name, arguments, control: "[success=done ignore=ignore default=die]", stateDirectory: hostState,
                        then: ["auth requisite pam_debug.so auth=maxtries"])
    }
}

/// A TCP port on 127.0.0.1 with a listener that completes connections but never reads or
/// answers (a hung validator); closed when dropped.
final class SilentListener {
    let port: Int
    private let socket: Int32

    /// `port` 0: one the kernel picks.
    init(port wanted: UInt16 = 0) throws {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = wanted.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, listen(fd, 16) == 0, named == 0 else {
            close(fd)
            throw HarnessError("bind/listen: \(String(cString: strerror(errno)))")
        }
        socket = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socket) }

    /// A port nothing listens on: bound, then closed again.
    static func closedPort() throws -> Int {
        let listener = try SilentListener()
        return listener.port
    }
}
