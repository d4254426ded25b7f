import Glibc
import SecurOTPStore

enum Formatting {
    /// "2026-11-22 14:03:07Z", or "never" for 0.
    static func time(_ unix: Int64) -> String {
        guard unix > 0 else { return "never" }
        var seconds = time_t(unix)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return String(unix) }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// ISO 8601 for JSON, or null.
    static func isoTime(_ unix: Int64) -> JSONValue {
        guard unix > 0 else { return .null }
        return .string(time(unix).replacingOccurrences(of: " ", with: "T"))
    }

    /// Left-aligned columns separated by two spaces.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (index, cell) in cells.enumerated() {
                let isLast = index == cells.count - 1
                text += isLast ? cell : cell + String(repeating: " ", count: widths[index] - cell.count + 2)
            }
            return text
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    static func json(_ record: TokenRecord) -> JSONValue {
        let p = record.parameters
        return .object([
            ("serial", .string(record.serial)),
            ("user", .string(record.user)),
            ("nickname", .string(record.nickname)),
            ("kind", .string(record.kind.rawValue)),
            ("algorithm", .string(record.kind == .securid ? "AES-128" : p.algorithm.name)),
            ("digits", .number(Int64(p.digits))),
            ("period", record.kind == .hotp || record.kind == .ocra ? .null : .number(Int64(p.period))),
            ("counter", record.kind == .hotp || record.kind == .ocra ? .number(Int64(bitPattern: p.counter)) : .null),
            ("issuer", .string(record.issuer)),
            ("state", .string(record.state)),
            ("created", isoTime(record.created)),
            ("last_used", isoTime(record.lastUsed)),
            ("expires", isoTime(record.expires)),
            ("pin_mode", .string(record.pinMode.rawValue)),
            ("pin_set", .bool(record.hasPIN)),
            ("pin_change_required", .bool(record.pinChangeRequired)),
            ("source", .string(record.source)),
            ("suite", record.kind == .ocra ? .string(record.suite) : .null),
        ])
    }

    /// "-", "set", "new PIN due", for `list` and `import`.
    static func pin(_ record: TokenRecord) -> String {
        switch record.pinMode {
        case .none: return "-"
        case .prefix, .addedByToken:
            let style = record.pinMode == .prefix ? "fob" : "pinpad"
            return record.needsNewPIN ? "\(style), new PIN due" : "\(style), set"
        }
    }
}

extension String {
    func replacingOccurrences(of target: Character, with replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
