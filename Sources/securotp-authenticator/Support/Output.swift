import Foundation
import SecurOTPAuthenticator
import SecurOTPCore
import SecurOTPCommandLine

/// Text tables and JSON for the commands' output.
enum Output {
    /// Pretty-free, key-sorted JSON on one line (without the newline).
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func table(_ header: [String], _ rows: [[String]]) -> String { TextTable.render(header, rows) }

    static let tokenHeader = ["SERIAL", "NICKNAME", "ISSUER", "KIND", "ALGORITHM", "DIGITS", "INTERVAL", "PIN", "EXPIRES"]

    static func row(_ token: StoredToken, now: Int64) -> [String] {
        [token.serial, token.nickname.isEmpty ? "-" : token.nickname, token.issuer.isEmpty ? "-" : token.issuer,
         token.kind.rawValue, token.kind == .securid ? "AES-128" : token.algorithm.name, String(token.digits),
         token.kind == .hotp ? "counter \(token.counter)" : "\(token.period)s", pin(token.pinMode),
         token.expires > 0 ? CalendarDate.text(token.expires) + (token.isExpired(at: now) ? " (expired)" : "") : "never"]
    }

    /// "-", "fob" (PIN typed before the code), "pinpad" (PIN added into the code).
    static func pin(_ mode: PINMode) -> String {
        switch mode {
        case .none: "-"
        case .prefix: "fob"
        case .addedByToken: "pinpad"
        }
    }
}

/// One token in `list` and `import` JSON. Absent values are null, never left out.
struct TokenJSON: Encodable {
    let token: StoredToken

    enum Keys: String, CodingKey {
        case serial, nickname, issuer, account, kind, algorithm, digits, period, counter, pinMode = "pin_mode", expires, source, created
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(token.serial, forKey: .serial)
        try container.encode(token.nickname, forKey: .nickname)
        try container.encode(token.issuer, forKey: .issuer)
        try container.encode(token.account, forKey: .account)
        try container.encode(token.kind.rawValue, forKey: .kind)
        try container.encode(token.kind == .securid ? "AES-128" : token.algorithm.name, forKey: .algorithm)
        try container.encode(token.digits, forKey: .digits)
        try container.encode(token.kind == .hotp ? nil : token.period, forKey: .period)
        try container.encode(token.kind == .hotp ? token.counter : nil, forKey: .counter)
        try container.encode(token.pinMode.rawValue, forKey: .pinMode)
        try container.encode(token.expires > 0 ? CalendarDate.timestamp(token.expires) : nil, forKey: .expires)
        try container.encode(token.source, forKey: .source)
        try container.encode(CalendarDate.timestamp(token.created), forKey: .created)
    }
}
