// The test-only software FIDO2 key (tests/softfido/softfido.c, built by `make softfido`), loaded
// with LD_PRELOAD into the processes that should see it, and the Debian FIDO tools that act as
// independent parties against it (docs/fido.md, "Testing with softfido").
import Foundation
import Glibc
import Testing

enum SoftFIDO {
    /// SOFTFIDO_LIB, else <package root>/.build/softfido/libsoftfido.so.
    static func library() throws -> String {
        let environment = ProcessInfo.processInfo.environment["SOFTFIDO_LIB"] ?? ""
        let path = environment.isEmpty ? Binaries.packageRoot + "/.build/softfido/libsoftfido.so" : environment
        guard FileManager.default.fileExists(atPath: path) else {
            throw HarnessError("\(path) does not exist: run `make softfido` first (`make test` does)")
        }
        return path
    }

    static func fido2Token() throws -> String { try Tools.require("/usr/bin/fido2-token", package: "fido2-tools") }
    static func fido2Assert() throws -> String { try Tools.require("/usr/bin/fido2-assert", package: "fido2-tools") }
    static func pamu2fcfg() throws -> String { try Tools.require("/usr/bin/pamu2fcfg", package: "pamu2fcfg") }

    /// Debian's pam_u2f.so, named by path in service files.
    static func pamU2F() throws -> String {
        for directory in ["/lib/x86_64-linux-gnu/security", "/usr/lib/x86_64-linux-gnu/security", "/lib/security"] {
            let path = directory + "/pam_u2f.so"
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        throw HarnessError("pam_u2f.so not found: install the Debian package libpam-u2f (scripts/install-deps.sh test)")
    }

    /// The name of the user running the tests: pam_u2f looks the user up and wants the
    /// authfile owned by that user or root.
    static var currentUser: String {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else { return "root" }
        return String(cString: name)
    }

    /// pamu2fcfg's default origin and what pam_u2f assumes without origin=: pam://HOSTNAME.
    static var defaultOrigin: String {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count - 1)
        return "pam://" + String(cString: name)
    }
}

/// One software key: a state file in a sandbox. `environment` loads it into a child process;
/// the behaviour knobs are always set (empty means off), so nothing leaks in from the runner.
struct SoftKey {
    let state: String
    var touch = "allow"
    var pin = ""
    var builtinUV = false
    /// CTAP 2.1 (SOFTFIDO_CTAP=2.1), else 2.0.
    var ctap21 = false
    /// alwaysUv (SOFTFIDO_ALWAYS_UV=1).
    var alwaysUV = false
    /// SOFTFIDO_LOG: a file the key appends one line to per getAssertion request (`requests()`).
    var requestLog = ""

    init(_ box: Sandbox, name: String = "softfido.state") { state = box.path(name) }

    func environment() throws -> [String: String] {
        [
            "LD_PRELOAD": try SoftFIDO.library(),
            "SOFTFIDO_STATE": state,
            "SOFTFIDO_TOUCH": touch,
            "SOFTFIDO_PIN": pin,
            "SOFTFIDO_UV": builtinUV ? "1" : "",
            "SOFTFIDO_CTAP": ctap21 ? "2.1" : "",
            "SOFTFIDO_ALWAYS_UV": alwaysUV ? "1" : "",
            "SOFTFIDO_ATTESTATION": "",
            "SOFTFIDO_DEBUG": "",
            "SOFTFIDO_LOG": requestLog,
        ]
    }

    /// A key that records what it is asked to sign (SOFTFIDO_LOG) in a file of the sandbox.
    func recording(_ box: Sandbox) -> SoftKey {
        var key = self
        key.requestLog = box.path("softfido-requests-\(UUID().uuidString.prefix(8)).log")
        return key
    }

    /// One getAssertion request the key received: the RP ID, the client data hash (hex) and
    /// whether user presence was asked for.
    struct AssertionRequest: Equatable, CustomStringConvertible {
        let rpID: String
        let clientDataHash: String
        let presence: Bool
        var description: String { "rp=\(rpID) cdh=\(clientDataHash) up=\(presence ? 1 : 0)" }
    }

    /// Every getAssertion request so far (a key made with `recording`).
    func requests() throws -> [AssertionRequest] {
        guard !requestLog.isEmpty else { throw HarnessError("this key records nothing: make it with recording(_:)") }
        guard let text = try? String(contentsOfFile: requestLog, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { line in
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "getAssertion", fields[1].hasPrefix("rp="), fields[2].hasPrefix("cdh="), fields[3].hasPrefix("up=") else {
                throw HarnessError("unexpected softfido log line: \(line)")
            }
            return AssertionRequest(rpID: String(fields[1].dropFirst(3)), clientDataHash: String(fields[2].dropFirst(4)), presence: fields[3] == "up=1")
        }
    }

    func refusing() -> SoftKey {
        var key = self
        key.touch = "deny"
        return key
    }

    func speakingCTAP21() -> SoftKey {
        var key = self
        key.ctap21 = true
        return key
    }

    func requiringUVAlways() -> SoftKey {
        var key = self
        key.alwaysUV = true
        return key
    }

    func withPIN(_ value: String) -> SoftKey {
        var key = self
        key.pin = value
        return key
    }

    /// The signature counter the state file holds.
    func storedCounter() throws -> UInt32 {
        let text = try String(contentsOfFile: state, encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("counter ") }),
              let value = UInt32(line.dropFirst("counter ".count)) else {
            throw HarnessError("no counter line in \(state):\n\(text)")
        }
        return value
    }

    /// Runs a program that sees this key.
    func run(_ executable: String, _ arguments: [String], extra: [String: String] = [:]) throws -> ProcessResult {
        try Run.run(executable, arguments, environment: try environment().merging(extra) { _, new in new })
    }

    /// `pamu2fcfg -u USER ARGS...` with PIN (if any) on stdin, as an admin would type it;
    /// returns the line it printed.
    func pamu2fcfg(_ user: String, _ arguments: [String] = [], pinAnswer: String? = nil) throws -> ProcessResult {
        let tool = try SoftFIDO.pamu2fcfg()
        let command = ([tool, "-u", user] + arguments).map(shellQuoted).joined(separator: " ")
        let input = pinAnswer.map { "printf '%s\\n' \(shellQuoted($0)) | " } ?? "exec </dev/null; "
        return try run("/bin/sh", ["-c", input + command])
    }

    /// One pam-check login through a private service directory, with this key attached.
    func login(_ box: Sandbox, _ service: String, _ user: String, _ responses: [String] = []) throws -> ProcessResult {
        try run(box.pamCheck, ["--confdir", box.pamDirectory, service, user] + responses)
    }

    /// The signature counter of one fresh assertion made with fido2-assert for `credentialID`
    /// (base64) at `origin`: byte 33…36 of the authenticator data it prints.
    func assertionCounter(credentialID: String, origin: String, box: Sandbox) throws -> UInt32 {
        let input = box.path("assert-\(UUID().uuidString).in")
        let challenge = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        try box.write([challenge, origin, credentialID].joined(separator: "\n") + "\n", to: input)
        let result = try run(try SoftFIDO.fido2Assert(), ["-G", "-i", input, "softfido:0"])
        guard result.status == 0, result.lines.count >= 4, let wrapped = Data(base64Encoded: result.lines[2]) else {
            throw HarnessError("fido2-assert -G failed:\n\(result)")
        }
        // fido2-assert prints the authenticator data as a CBOR byte string: 0x58 0x25 + 37 bytes.
        let authData = [UInt8](wrapped.dropFirst(2))
        guard wrapped.count == 39, wrapped.first == 0x58, authData.count == 37 else {
            throw HarnessError("unexpected authenticator data \(result.lines[2])")
        }
        return authData[33...36].reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// Single-quoted for /bin/sh.
func shellQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

/// One credential of a pam_u2f mapping line: `KH,PK,type,attributes`.
struct U2FCredential: Equatable {
    let keyHandle: String
    let publicKey: String
    let type: String
    let attributes: String

    /// Parses `user:KH,PK,type,attrs[:...]`; returns the user and the credentials.
    static func parse(line: String) throws -> (user: String, credentials: [U2FCredential]) {
        let fields = line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count >= 2 else { throw HarnessError("not a pam_u2f line: \(line)") }
        let credentials = try fields.dropFirst().map { field -> U2FCredential in
            let parts = field.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 4 else { throw HarnessError("not a native pam_u2f credential: \(field)") }
            return U2FCredential(keyHandle: parts[0], publicKey: parts[1], type: parts[2], attributes: parts[3])
        }
        return (String(fields[0]), credentials)
    }
}
