/// Just enough JSON output for `--format json` (JSONValue in SecurOTPCore is what the module
/// reads; this is what the CLI writes): objects with string, number, bool and null
/// values, and arrays of them. Keys keep the order given.
indirect enum JSONOutput {
    case string(String)
    case number(Int64)
    case bool(Bool)
    case null
    case object([(String, JSONOutput)])
    case array([JSONOutput])

    var rendered: String {
        switch self {
        case .string(let text): Self.quote(text)
        case .number(let value): String(value)
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        case .object(let members): "{" + members.map { Self.quote($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
        case .array(let items): "[" + items.map(\.rendered).joined(separator: ",") + "]"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
