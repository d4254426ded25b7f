import Glibc

/// UTC dates for messages and listings.
public enum CalendarDate {
    /// "2036-01-01" for a Unix time.
    public static func text(_ unixTime: Int64) -> String {
        var seconds = time_t(unixTime)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return String(unixTime) }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
    }

    /// "2036-01-01T00:00:00Z" (ISO 8601) for a Unix time.
    public static func timestamp(_ unixTime: Int64) -> String {
        var seconds = time_t(unixTime)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return String(unixTime) }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return text(unixTime) + "T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
