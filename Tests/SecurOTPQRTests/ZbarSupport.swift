import Foundation
@testable import SecurOTPQR
import Testing

/// Runs the real zbar decoder (Debian package zbar-tools) on a PNG we produced: an independent
/// reader, so a wrong table, mask, or format bit shows up as a decode failure or wrong text.
enum Zbar {
    static let path = "/usr/bin/zbarimg"

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Decoded payload bytes (without zbar's trailing newline), or a Failure describing why not.
    static func decode(png: [UInt8]) throws -> [UInt8] {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "zbarimg not found at \(path): install the Debian package zbar-tools to run the QR decode tests")
        }
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("securotp-qr-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--raw", "-q", file.path]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read before waiting so a large payload cannot fill the pipe and deadlock.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "zbarimg exited \(process.terminationStatus) (4 = no symbol found): \(String(decoding: stderr, as: UTF8.self))")
        }
        var bytes = [UInt8](stdout)
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        return bytes
    }

    /// Encodes, renders, decodes, and expects the exact input back.
    @discardableResult
    static func roundTrip(
        _ input: [UInt8], _ level: QRErrorCorrection, scale: Int = 4,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> QRCode {
        let code = try QRCode.encode(input, errorCorrection: level)
        let decoded = try decode(png: code.png(scale: scale))
        #expect(decoded == input,
                "zbar read back \(decoded.count) bytes for a \(input.count)-byte input (version \(code.version), \(level))",
                sourceLocation: sourceLocation)
        return code
    }
}
