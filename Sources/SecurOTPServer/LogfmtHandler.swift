import Foundation
import Logging

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

    static func quote(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "\"" && $0 != "=" && $0 != "\\" && $0.value < 0x7f }
        if plain { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out += scalar.value < 0x20 ? " " : String(scalar)
            }
        }
        return out + "\""
    }

    static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
