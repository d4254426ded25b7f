import Foundation
import Testing
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

/// Test data and helpers for the SecurID importers. The vectors come from
/// Tests/Vectors/securid.json (Debian stoken 0.92, seeds chosen by us; see its README) and are
/// read as data. Everything is namespaced here so it cannot clash with other import tests.
enum SecurIDFixtures {
    static let vectorURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors").appendingPathComponent("securid.json")

    nonisolated(unsafe) static let root: [String: Any] = {
        guard let data = try? Data(contentsOf: vectorURL),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return object
    }()

    static var tokens: [String: Any] { root["tokens"] as? [String: Any] ?? [:] }
    static var exports: [String: Any] { root["exports"] as? [String: Any] ?? [:] }
    static var vectors: [[String: Any]] { root["vectors"] as? [[String: Any]] ?? [] }
    static var intermediates: [String: Any] { root["intermediates"] as? [String: Any] ?? [:] }

    static func token(_ letter: String) -> [String: Any]? { tokens[letter] as? [String: Any] }
    static func vector(id: String) -> [String: Any]? { vectors.first { $0["id"] as? String == id } }
    static func exportString(_ name: String) -> String? { (exports[name] as? [String: Any])?["string"] as? String }

    /// A fixed "now" (2023-11-14) before every vector token's expiry.
    static let now: Int64 = 1_700_000_000

    static func options(password: String? = nil, device: String? = nil, now: Int64 = now) -> ImportOptions {
        ImportOptions(password: password.map { Array($0.utf8) }, bindingID: device, now: now)
    }

    static func ctfError(_ text: String, _ options: ImportOptions) -> ImportError? {
        do {
            _ = try SecurIDCTF.decode(text, options: options)
            return nil
        } catch {
            return error
        }
    }

    static func sdtidError(_ text: String, _ options: ImportOptions) -> ImportError? {
        sdtidError(Array(text.utf8), options)
    }

    static func sdtidError(_ bytes: [UInt8], _ options: ImportOptions) -> ImportError? {
        do {
            _ = try SecurIDSDTID.decode(bytes, options: options)
            return nil
        } catch {
            return error
        }
    }

    static func parameters(_ token: ImportedToken) -> SecurIDParameters? {
        if case .securID(let parameters) = token.kind { return parameters }
        return nil
    }

    static func seedHex(_ token: ImportedToken) -> String { token.secret.withUnsafeBytes { Hex.encode($0) } }

    static func securID(_ token: ImportedToken) -> SecurIDToken? {
        guard let parameters = parameters(token), let serial = token.serial else { return nil }
        return SecurIDToken(serial: serial, seed: token.secret, parameters: parameters)
    }

    /// Unix time of a "YYYY/MM/DD" date at 00:00 UTC.
    static func unixTime(ofDate text: String) -> Int64? {
        let parts = text.split(separator: "/").compactMap { Int($0) }
        guard parts.count == 3 else { return nil }
        var fields = tm()
        fields.tm_year = Int32(parts[0] - 1900)
        fields.tm_mon = Int32(parts[1] - 1)
        fields.tm_mday = Int32(parts[2])
        return Int64(timegm(&fields))
    }

    /// Checks an imported token against token "A" or "B" of the vector file.
    static func expectMatches(_ imported: ImportedToken, letter: String, keepsLocalPIN: Bool = true,
                              source: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let entry = try #require(token(letter), sourceLocation: sourceLocation)
        let parameters = try #require(Self.parameters(imported), sourceLocation: sourceLocation)
        let pinMode = try #require(entry["pin_mode"] as? Int, sourceLocation: sourceLocation)
        #expect(imported.serial == entry["serial"] as? String, sourceLocation: sourceLocation)
        #expect(seedHex(imported) == entry["seed_hex"] as? String, sourceLocation: sourceLocation)
        #expect(parameters.digits == entry["digits"] as? Int, sourceLocation: sourceLocation)
        #expect(parameters.interval == entry["interval"] as? Int, sourceLocation: sourceLocation)
        #expect(parameters.addsPIN == (pinMode & 2 != 0), sourceLocation: sourceLocation)
        if keepsLocalPIN { #expect(parameters.localPIN == (pinMode & 1 != 0), sourceLocation: sourceLocation) }
        #expect(parameters.is128Bit, sourceLocation: sourceLocation)
        #expect(imported.pinMode == (pinMode & 2 != 0 ? .addedByToken : .prefix), sourceLocation: sourceLocation)
        let firstExpired = (entry["stoken_show_expiration"] as? String).flatMap(unixTime(ofDate:))
        #expect(firstExpired != nil && parameters.expiresAt == firstExpired, sourceLocation: sourceLocation)
        #expect(imported.expires == parameters.expiresAt, sourceLocation: sourceLocation)
        #expect(imported.source == source, sourceLocation: sourceLocation)
    }
}

/// Debian's `stoken` 0.92 as an independent oracle. When it is missing the tests fail with
/// the command that installs it; they never skip.
enum SecurIDStokenCLI {
    static let path: String? = ["/usr/bin/stoken", "/usr/local/bin/stoken"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static let missing = "stoken is not installed: it is the independent oracle for the SecurID import tests (apt-get install -y stoken)"

    /// Scratch HOME (so ~/.stokenrc is never touched) and place for generated files.
    static let directory: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("securotp-securid-import-tests")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func requirePath() throws -> String {
        guard let path else { throw Failure(description: missing) }
        return path
    }

    /// Runs stoken; returns trimmed standard output, throws on a non-zero exit.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try requirePath())
        process.arguments = arguments
        process.environment = ["HOME": directory.path, "PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "stoken \(arguments.first ?? "") exited with \(process.terminationStatus): "
                + String(decoding: errData, as: UTF8.self))
        }
        return String(decoding: outData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Writes `text` to a fresh file in the scratch directory and returns its path; callers
    /// remove it (`defer { S.remove(path) }`).
    static func file(_ text: String, name: String) throws -> String {
        let url = directory.appendingPathComponent("\(UUID().uuidString)-\(name)")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

    /// The "Decrypted seed" that `stoken show --seed` prints, as lowercase hex.
    static func seedHex(_ sourceArguments: [String]) throws -> String {
        let shown = try run(["show", "--seed", "--batch"] + sourceArguments)
        for line in shown.split(separator: "\n") where line.hasPrefix("Decrypted seed") {
            guard let colon = line.firstIndex(of: ":") else { break }
            return line[line.index(after: colon)...].split(separator: " ").joined()
        }
        throw Failure(description: "no decrypted seed in stoken show output:\n\(shown)")
    }
}
