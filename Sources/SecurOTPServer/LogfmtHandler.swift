import Foundation
import Logging
import SecurOTPCore

/// Structured logs for journald or a collector: one logfmt line per event on standard error,
/// `time=… level=… msg=… key=value`, values quoted when they need it.
public struct LogfmtHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let label: String
    private static let lock = NSLock()

    public init(label: String) { self.label = label }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let level = event.level, message = event.message, explicit = event.metadata
        var fields = "time=\(Self.timestamp()) level=\(level.rawValue) msg=\(Self.quote(message.description))"
        let all = metadata.merging(explicit ?? [:]) { $1 }
        for key in all.keys.sorted() where key != "hb.request.id" {
            fields += " \(key)=\(Self.quote(all[key].map { "\($0)" } ?? ""))"
        }
        if let id = all["hb.request.id"] { fields += " request=\(Self.quote("\(id)"))" }
        let bytes = Array((fields + "\n").utf8)
        Self.lock.lock()
        defer { Self.lock.unlock() }
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    /// Longest value a line carries: a caller's request path or name cannot make lines huge.
    static let maxValueBytes = 2048

    /// A logfmt value: plain when it can be, else quoted with `"`, `\` and newlines escaped
    /// and every other control or bidi character a visible escape (TerminalText), bounded.
    static func quote(_ value: String) -> String {
        let value = TerminalText.bounded(value, maxBytes: maxValueBytes)
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "\"" && $0 != "=" && $0 != "\\" && $0.value < 0x7f }
        if plain { return value }
        var body = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": body += "\\\""
            case "\\": body += "\\\\"
            case "\n": body += "\\n"
            default: body.unicodeScalars.append(scalar)
            }
        }
        return "\"" + TerminalText.escaped(body) + "\""
    }

    static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
