/// Offline approval (docs/push.md, "Offline approval"): when the device cannot reach the
/// validator, the prompt shows an 8-digit challenge derived from the login's request; the device
/// answers it with OCRA under the offline secret it shares with the validator. The host and the
/// validator derive the same challenge, each from its own view of the request.
public enum OfflineApproval {
    /// The suite every offline response is made with (fixed by the contract).
    public static let suiteText = "OCRA-1:HOTP-SHA256-8:QN08"
    /// Bytes of the offline secret the validator issues at activation.
    public static let secretLength = 32
    /// Digits of the challenge and of the response.
    public static let digits = 8

    static let domain = Array("securotp-offline-v1".utf8)

    /// `"securotp-offline-v1" || field(id) || … || field(expires) || field("")`: the statement's
    /// fields with `device` empty, under a domain of its own (so no signed statement and no
    /// offline input are ever the same bytes).
    public static func challengeInput(_ statement: PushStatement) -> [UInt8] {
        var out = domain
        for value in [statement.id, statement.user, statement.host, statement.service, statement.remoteAddress, statement.tty,
                      statement.command, statement.nonce, statement.number, statement.expires, ""] {
            PushStatement.appendField(value, to: &out)
        }
        return out
    }

    /// The 8 decimal digits: the first 8 bytes of SHA-256(input), big-endian, modulo 10^8.
    /// The statement's `device` is ignored (the challenge is the same for every device).
    public static func challenge(_ statement: PushStatement) -> String {
        let digest = PushStatement.sha256(challengeInput(statement))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return String(decoding: DecimalDigits.low(value, count: digits), as: UTF8.self)
    }

    /// The challenge as the prompt shows it: two groups of four digits (`1234 5678`), so the
    /// six-digit number stays the only group of six digits in the prompt.
    public static func grouped(_ challenge: String) -> String {
        let characters = Array(challenge.utf8)
        guard characters.count == digits else { return challenge }
        return String(decoding: characters[0..<4], as: UTF8.self) + " " + String(decoding: characters[4..<8], as: UTF8.self)
    }

    /// A challenge as typed on the device: 8 digits, spaces and dashes between them allowed.
    /// Nil for anything else.
    public static func normalizedChallenge(_ typed: String) -> String? {
        var out: [UInt8] = []
        for character in typed.utf8 {
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard out.count < digits else { return nil }
                out.append(character)
            case UInt8(ascii: " "), UInt8(ascii: "-"):
                continue
            default:
                return nil
            }
        }
        return out.count == digits ? String(decoding: out, as: UTF8.self) : nil
    }

    /// The 8-digit response to `challenge` (8 digits) under `secret`: OCRA with `suiteText`.
    public static func response(secret: SecretBytes, challenge: String) throws(OCRAError) -> [UInt8] {
        guard secret.count == secretLength else {
            throw OCRAError(.key, "the offline secret has \(secretLength) bytes (got \(secret.count))")
        }
        guard normalizedChallenge(challenge) == challenge else {
            throw OCRAError(.question, "an offline challenge is \(digits) digits")
        }
        let suite = try OCRASuite(suiteText)
        return try OCRA.response(suite: suite, key: secret, question: challenge)
    }

    /// Whether `answer` is the response to `challenge` under `secret`, compared in constant time.
    /// Anything that is not exactly 8 digits is not.
    public static func matches(_ answer: String, secret: SecretBytes, challenge: String) -> Bool {
        let typed = Array(answer.utf8)
        guard typed.count == digits, let expected = try? response(secret: secret, challenge: challenge) else { return false }
        return ConstantTime.equal(typed, expected)
    }
}
