import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// Test vectors from Tests/Vectors (see its README for provenance). They stay data: tests load
/// them and never paste expected values into code.
enum ImportVectors {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Vectors")

    static func json(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CocoaError(.fileReadCorruptFile)
        }
        return object
    }

    static func bytes(_ relativePath: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(relativePath)))
    }

    static func text(_ relativePath: String) throws -> String {
        String(decoding: try bytes(relativePath), as: UTF8.self)
    }
}

extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
    func table(_ key: String) -> [String: Any]? { self[key] as? [String: Any] }
    func list(_ key: String) -> [[String: Any]] { self[key] as? [[String: Any]] ?? [] }
    func strings(_ key: String) -> [String] { self[key] as? [String] ?? [] }
}

/// A fixed "now" (2023-11-14) so expiry checks do not depend on the clock.
let testNow: Int64 = 1_700_000_000

func options(password: String? = nil, transportKeyHex: String? = nil, now: Int64 = testNow) -> ImportOptions {
    ImportOptions(password: password.map { Array($0.utf8) },
                  transportKey: transportKeyHex.flatMap(Hex.decode).map { SecretBytes(copying: $0) },
                  now: now)
}

func importText(_ text: String, _ options: ImportOptions = options()) throws(ImportError) -> [ImportedToken] {
    try TokenImporter.parse(Array(text.utf8), options: options)
}

/// The error an import fails with, or nil when it succeeds.
func importError(_ text: String, _ options: ImportOptions = options()) -> ImportError? {
    importError(Array(text.utf8), options)
}

func importError(_ bytes: [UInt8], _ options: ImportOptions = options()) -> ImportError? {
    do {
        _ = try TokenImporter.parse(bytes, options: options)
        return nil
    } catch {
        return error
    }
}

extension ImportedToken {
    var secretHex: String { secret.withUnsafeBytes { Hex.encode($0) } }
    var secretASCII: String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    var oath: OATHParameters? {
        if case .oath(let parameters) = kind { return parameters }
        return nil
    }

    /// The code this token shows at `time` (TOTP) or at its counter (HOTP).
    func code(at time: Int64) -> String? {
        guard let oath else { return nil }
        let digits: [UInt8]
        switch oath.kind {
        case .totp: digits = OTP.totp(secret: secret, unixTime: time, period: oath.period, digits: oath.digits, algorithm: oath.algorithm)
        case .hotp: digits = OTP.hotp(secret: secret, counter: oath.counter, digits: oath.digits, algorithm: oath.algorithm)
        }
        return String(decoding: digits, as: UTF8.self)
    }
}

/// External programs used as independent oracles. A missing tool fails the test with the
/// command that installs it; it never skips.
enum Oracle {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `arguments` through /usr/bin/env (so PATH decides which python3/oathtool) and
    /// returns standard output.
    static func run(_ arguments: [String], stdin: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes before waiting so a chatty child cannot block on a full pipe.
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let lastLine = String(decoding: errData, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
            throw Failure(description: "\(arguments.prefix(2).joined(separator: " ")) exited with \(process.terminationStatus): \(lastLine)")
        }
        return String(decoding: outData, as: UTF8.self)
    }

    /// python-pskc (PyPI package `python-pskc`), checked once.
    static let pythonPSKCVersion: Result<String, Failure> = {
        do {
            let version = try run(["python3", "-c", "import pskc; print(pskc.__version__)"])
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return .success(version)
        } catch {
            return .failure(Failure(description: "python-pskc is not available to python3 (\(error)); "
                + "install it with: pip install python-pskc"))
        }
    }()

    static func requirePythonPSKC() throws -> String { try pythonPSKCVersion.get() }

    /// `oathtool` (Debian package oathtool) for one token: TOTP at `time`, HOTP at its counter.
    static func oathtool(_ token: ImportedToken, time: Int64) throws -> String {
        guard let oath = token.oath else { throw Failure(description: "not an OATH token") }
        var arguments = ["oathtool", "-d", String(oath.digits)]
        switch oath.kind {
        case .totp:
            arguments += ["--totp=\(oath.algorithm.name.lowercased())", "-s", "\(oath.period)", "--now=@\(time)"]
        case .hotp:
            guard oath.algorithm == .sha1 else { throw Failure(description: "oathtool's HOTP is SHA-1 only") }
            arguments += ["--hotp", "-c", "\(oath.counter)"]
        }
        do {
            return try run(arguments + [token.secretHex]).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw Failure(description: "oathtool failed (\(error)); install it with: apt-get install oathtool")
        }
    }
}
