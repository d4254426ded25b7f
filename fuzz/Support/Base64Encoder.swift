/// Standard base64 (RFC 4648 §4) with padding: harnesses build valid encoded inputs with it.
/// Written here, not taken from the importers, so it does not share their mistakes.
public enum Base64Encoder {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            var group = 0
            for offset in 0..<3 { group = group << 8 | Int(offset < chunk.count ? chunk[offset] : 0) }
            for symbol in 0..<4 {
                if symbol <= chunk.count {
                    out.append(alphabet[(group >> (18 - 6 * symbol)) & 63])
                } else {
                    out.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `%2B`, `%2F`, `%3D` for `+`, `/`, `=`, as URLs carry base64.
    public static func percentEscaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "+": out += "%2B"
            case "/": out += "%2F"
            case "=": out += "%3D"
            default: out.append(character)
            }
        }
        return out
    }
}
