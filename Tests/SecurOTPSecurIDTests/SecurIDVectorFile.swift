import Foundation
import SecurOTPCore
import SecurOTPSecurID

/// Tests/Vectors/securid.json (copied from ../shared/vectors; generated with Debian stoken 0.92,
/// see its README). Loaded as data: expected values are never pasted into the tests.
enum SecurIDVectorFile {
    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors").appendingPathComponent("securid.json")

    nonisolated(unsafe) static let root: [String: Any] = {
        guard let data = try? Data(contentsOf: url),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return object
    }()

    static var tokens: [String: Any] { root["tokens"] as? [String: Any] ?? [:] }
    static var vectors: [[String: Any]] { root["vectors"] as? [[String: Any]] ?? [] }
    static var intermediates: [String: Any] { root["intermediates"] as? [String: Any] ?? [:] }
    static var exports: [String: Any] { root["exports"] as? [String: Any] ?? [:] }

    static func vector(id: String) -> [String: Any]? { vectors.first { $0["id"] as? String == id } }

    /// Token "A" or "B" as described in the file (serial, seed, digits, interval, PIN mode).
    static func token(_ letter: String) -> SecurIDToken? {
        guard let entry = tokens[letter] as? [String: Any],
              let serial = entry["serial"] as? String,
              let seed = (entry["seed_hex"] as? String).flatMap(Hex.decode),
              let digits = entry["digits"] as? Int, let interval = entry["interval"] as? Int,
              let pinMode = entry["pin_mode"] as? Int else { return nil }
        let parameters = SecurIDParameters(digits: digits, interval: interval, addsPIN: pinMode & 2 != 0,
                                           localPIN: pinMode & 1 != 0)
        return SecurIDToken(serial: serial, seed: SecretBytes(copying: seed), parameters: parameters)
    }
}

extension [UInt8] {
    var ascii: String { String(decoding: self, as: UTF8.self) }
}

/// Debian's `stoken` (0.92) as an independent oracle. Missing → the test fails with a message
/// saying how to install it.
enum SecurIDStoken {
    static let path: String? = ["/usr/bin/stoken", "/usr/local/bin/stoken"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static let missing = "stoken is not installed: it is the independent oracle for the SecurID tests (apt-get install -y stoken)"

    /// A scratch HOME so ~/.stokenrc is never read or written.
    static let home: URL = {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("securotp-securid-tests")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }()

    struct Result {
        var status: Int32
        var output: String
        var error: String
    }

    static func run(_ arguments: [String]) throws -> Result {
        guard let path else { throw CocoaError(.fileNoSuchFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ["HOME": home.path, "PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      output: String(decoding: outData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
                      error: String(decoding: errData, as: UTF8.self))
    }
}
