import Foundation
import Glibc
import SecurOTPAuthenticator
import SecurOTPCore
import SecurOTPStore
import Testing

/// A fresh store directory per test (removed when dropped), two machine identities and the
/// shared vector files. Identities are given explicitly, so "another machine" or "another uid"
/// is a different value, while file ownership stays the real euid's.
final class Scratch {
    let root: String
    var paths: AuthenticatorPaths { AuthenticatorPaths(directory: root + "/store") }

    static let machine = "0123456789abcdef0123456789abcdef"
    static let otherMachine = "fedcba9876543210fedcba9876543210"
    static var me: DeviceIdentity { DeviceIdentity(uid: geteuid(), machineID: machine) }
    /// A fixed "now" (2023-11-14) before every vector token's expiry.
    static let now: Int64 = 1_700_000_000

    init() throws {
        var template = Array((NSTemporaryDirectory() + "securotp-authenticator-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) } }
        guard let made else { throw Failure("mkdtemp failed: \(String(cString: strerror(errno)))") }
        root = made
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func open(_ identity: DeviceIdentity = Scratch.me, paths: AuthenticatorPaths? = nil, create: Bool = true) throws -> AuthenticatorStore {
        try AuthenticatorStore.open(paths ?? self.paths, identity: identity, create: create, now: Self.now)
    }

    /// `cp -a` of the store directory, as someone moving it to another machine would.
    func copyStore(to name: String) throws -> AuthenticatorPaths {
        let target = root + "/" + name
        let result = try Tool.run("/bin/cp", ["-a", paths.directory, target])
        guard result.status == 0 else { throw Failure("cp -a failed: \(result.error)") }
        return AuthenticatorPaths(directory: target)
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    func owner(_ path: String) -> uid_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_uid : UInt32.max
    }

    func bytes(_ path: String) -> [UInt8] { (try? Array(Data(contentsOf: URL(fileURLWithPath: path)))) ?? [] }

    func write(_ text: String, _ name: String, mode: mode_t = 0o600) throws -> String {
        let path = root + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
        return path
    }

    /// Runs SQL on the store's database behind the store's back (tampering tests).
    func sql(_ statement: String, paths: AuthenticatorPaths? = nil) throws {
        try SQLiteDatabase(path: (paths ?? self.paths).database, create: false).execute(statement)
    }

    /// A token's sealed seed as stored, and a way to put another blob in its place.
    func sealedSeed(_ serial: String) throws -> [UInt8] {
        let db = try SQLiteDatabase(path: paths.database, create: false)
        let statement = try db.prepare("SELECT sealed_seed FROM tokens WHERE serial = ?")
        try statement.bind(.text(serial))
        guard try statement.step() else { throw Failure("no token \(serial)") }
        defer { statement.reset() }
        return statement.blob(0)
    }

    func setSealedSeed(_ serial: String, _ blob: [UInt8]) throws {
        let db = try SQLiteDatabase(path: paths.database, create: false)
        try db.prepare("UPDATE tokens SET sealed_seed = ? WHERE serial = ?").bind(.blob(blob), .text(serial)).run()
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The shared vector files in Tests/Vectors, read as data.
enum Vectors {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors")

    static func json(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw Failure("\(name) is not a JSON object") }
        return object
    }

    static func file(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: directory.appendingPathComponent(name))) }

    static func securIDToken(_ letter: String) throws -> [String: Any] {
        guard let tokens = try json("securid.json")["tokens"] as? [String: Any], let token = tokens[letter] as? [String: Any] else {
            throw Failure("securid.json has no token \(letter)")
        }
        return token
    }

    static func securIDExport(_ name: String) throws -> String {
        guard let exports = try json("securid.json")["exports"] as? [String: Any], let export = exports[name] as? [String: Any],
              let string = export["string"] as? String else { throw Failure("securid.json has no export \(name)") }
        return string
    }
}

/// Independent oracles, run at test time: oathtool (OATH) and stoken (SecurID). Missing tools
/// fail the tests with the command that installs them; they never skip.
enum Tool {
    struct Result {
        let status: Int32
        let output: String
        let error: String
    }

    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      output: String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
                      error: String(decoding: error, as: UTF8.self))
    }

    static func require(_ path: String, package: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure("\(path) is missing: it is an independent oracle for these tests (apt-get install -y \(package))")
        }
        return path
    }

    /// oathtool's code for a hex secret: TOTP at a time, or HOTP at a counter.
    static func oathtool(hex: String, algorithm: HashAlgorithm = .sha1, digits: Int, period: Int = 30,
                         at time: Int64 = 0, counter: UInt64? = nil) throws -> String {
        var arguments = ["--digits=\(digits)"]
        if let counter {
            arguments += ["--hotp", "--counter=\(counter)"]
        } else {
            arguments += ["--totp=\(algorithm.name.lowercased())", "--time-step-size=\(period)s", "--now=@\(time)"]
        }
        let result = try run(try require("/usr/bin/oathtool", package: "oathtool"), arguments + [hex])
        guard result.status == 0, result.output.count == digits else { throw Failure("oathtool \(arguments): \(result.error)") }
        return result.output
    }

    /// Scratch HOME for stoken, so ~/.stokenrc is never read or written.
    static let stokenHome: String = {
        let path = NSTemporaryDirectory() + "securotp-authenticator-stoken"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    static func stoken(_ arguments: [String]) throws -> String {
        let result = try run(try require("/usr/bin/stoken", package: "stoken"), arguments + ["--batch", "--force"],
                             environment: ["HOME": stokenHome, "PATH": "/usr/bin:/bin", "LC_ALL": "C"])
        guard result.status == 0 else { throw Failure("stoken \(arguments.first ?? ""): \(result.error)") }
        return result.output
    }

    /// stoken's passcode for a CTF string at a time; PIN 0000 is the bare tokencode.
    static func stokenCode(_ ctf: String, at time: Int64, pin: String = "0000", password: String? = nil) throws -> String {
        var arguments = ["tokencode", "--token=\(ctf)", "--use-time=\(time)", "--pin=\(pin)"]
        if let password { arguments.append("--password=\(password)") }
        return try stoken(arguments)
    }
}

extension AuthenticatorStore {
    /// Imports a text source at a fixed time (tests).
    func importText(_ text: String, password: String? = nil, now: Int64 = Scratch.now) throws -> [StoredToken] {
        try importTokens(from: Array(text.utf8), password: password.map { Array($0.utf8) }, transportKey: nil, nickname: nil, now: now)
    }
}

/// The error a throwing expression threw, for checks on its code and message.
func caught<T>(_ body: () throws -> T) -> (any Error)? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
