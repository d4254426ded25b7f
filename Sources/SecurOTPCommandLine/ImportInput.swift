import Foundation
import SecurOTPCore
import SecurOTPImport

/// What `import` reads besides its options, the same for the admin CLI and the authenticator:
/// the source (a file, - for standard input, or the token string itself), the password and the
/// PSKC transport key (given directly or in a file).
public enum ImportInput {
    /// The source's bytes, at most one byte over the importer's limit (so it reports the size).
    public static func source(_ source: String) throws -> [UInt8] {
        let limit = TokenImporter.maximumInputSize + 1
        if source == "-" { return Array(try FileHandle.standardInput.read(upToCount: limit) ?? Data()) }
        if FileManager.default.fileExists(atPath: source) {
            guard let handle = FileHandle(forReadingAtPath: source) else { throw CLIError(.inputUnreadable, "cannot read \(source)") }
            defer { try? handle.close() }
            return Array(try handle.read(upToCount: limit) ?? Data())
        }
        if source.contains("://") || source.allSatisfy({ $0.isNumber || $0 == "-" }) || source.count > 100 {
            return Array(source.utf8)
        }
        throw CLIError(.inputUnreadable, "\(source): no such file (give a file, - for standard input, or the token string)")
    }

    /// `--password` or the first line of `--password-file`; nil when neither is given.
    public static func password(_ password: String?, file: String?) throws -> [UInt8]? {
        if let password { return Array(password.utf8) }
        guard let file else { return nil }
        return try Terminal.firstLine(of: file, what: "password")
    }

    /// `--key` or the first line of `--key-file`, checked: 16, 24 or 32 bytes of hex.
    public static func transportKey(_ key: String?, file: String?) throws -> SecretBytes? {
        var text = key
        if let file {
            text = String(decoding: try Terminal.firstLine(of: file, what: "transport key"), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        }
        guard let text else { return nil }
        guard let bytes = Hex.decode(text), [16, 24, 32].contains(bytes.count) else {
            throw CLIError(.invalidInput, "the transport key must be 16, 24 or 32 bytes of hex")
        }
        return SecretBytes(copying: bytes)
    }
}
