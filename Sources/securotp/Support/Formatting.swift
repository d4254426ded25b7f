import Glibc
import SecurOTPService
import SecurOTPCommandLine

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
    static func isoTime(_ unix: Int64) -> JSONOutput {
        guard unix > 0 else { return .null }
        return .string(time(unix).replacingOccurrences(of: " ", with: "T"))
    }

    static func table(_ header: [String], _ rows: [[String]]) -> String { TextTable.render(header, rows) }

    static func json(_ token: TokenInfo) -> JSONOutput {
        var members: [(String, JSONOutput)] = [
            ("serial", .string(token.serial)),
            ("user", .string(token.user)),
            ("nickname", .string(token.nickname)),
            ("kind", .string(token.kind)),
            ("algorithm", .string(token.algorithm)),
            ("digits", .number(Int64(token.digits))),
            ("period", token.period.map { .number(Int64($0)) } ?? .null),
            ("counter", token.counter.map { .number($0) } ?? .null),
            ("issuer", .string(token.issuer)),
            ("state", .string(token.state)),
            ("created", isoTime(token.created)),
            ("last_used", isoTime(token.lastUsed)),
            ("expires", isoTime(token.expires)),
            ("pin_mode", .string(token.pinMode)),
            ("pin_set", .bool(token.pinSet)),
            ("pin_change_required", .bool(token.pinChangeRequired)),
            ("source", .string(token.source)),
            ("suite", token.suite.map { .string($0) } ?? .null),
        ]
        if let locked = token.userLocked { members.append(("user_locked", .bool(locked))) }
        return .object(members)
    }

    /// "-", "fob, set", "pinpad, new PIN due", for `list` and `import`.
    static func pin(_ token: TokenInfo) -> String {
        guard token.pinMode != "none" else { return "-" }
        let style = token.pinMode == "prefix" ? "fob" : "pinpad"
        return token.needsNewPIN ? "\(style), new PIN due" : "\(style), set"
    }

    /// "30s", "-" (HOTP) or the OCRA suite, for the PERIOD column.
    static func period(_ token: TokenInfo) -> String {
        if token.kind == "ocra" { return token.suite ?? "-" }
        return token.period.map { "\($0)s" } ?? "-"
    }
}

extension String {
    func replacingOccurrences(of target: Character, with replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
