/// An OCRA suite (RFC 6287 §6): `Algorithm:CryptoFunction:DataInput`, for example
/// `OCRA-1:HOTP-SHA1-6:QN08` or `OCRA-1:HOTP-SHA256-8:C-QN08-PSHA1`.
///
/// * Algorithm: `OCRA-1` (the only version).
/// * CryptoFunction: `HOTP-SHA1-t`, `HOTP-SHA256-t` or `HOTP-SHA512-t`, where `t` is 0 (no
///   truncation: the whole HMAC) or 4–10 digits.
/// * DataInput: `[C-]QFxx[-PH][-Snnn][-TG]`, in that order, `-`-separated:
///   `C` an 8-byte counter; `Q` a challenge of format `F` (`A` alphanumeric, `N` numeric,
///   `H` hexadecimal) and at most `xx` (04–64) characters; `P` a PIN/password hash, `H` =
///   `SHA1` (the default when `P` stands alone), `SHA256` or `SHA512`; `S` session information
///   of `nnn` bytes (001–999, default 064); `T` a timestamp counted in steps of `G` =
///   1–59`S`, 1–59`M` or 1–48`H` (default `1M`).
///
/// The suite string itself is part of every HMAC input, so it is kept exactly as given.
public struct OCRASuite: Sendable, Equatable, CustomStringConvertible {
    public enum QuestionFormat: Sendable, Equatable {
        case alphanumeric, numeric, hexadecimal
    }

    /// Longer input is refused before it is looked at (the longest valid suite has 47 bytes).
    public static let maximumTextLength = 64
    public static let digitChoices: [Int] = [0, 4, 5, 6, 7, 8, 9, 10]
    public static let questionLengthRange = 4...64
    public static let sessionLengthRange = 1...999

    /// The suite string, byte for byte as parsed.
    public let text: String
    /// The HMAC hash of the crypto function.
    public let algorithm: HashAlgorithm
    /// Response digits: 4–10, or 0 for the whole HMAC (no truncation).
    public let digits: Int
    /// `C`: the HMAC input starts with an 8-byte counter.
    public let usesCounter: Bool
    public let questionFormat: QuestionFormat
    /// `xx` of `QFxx`: the most characters one challenge may have.
    public let questionLength: Int
    /// `PH`: the hash whose output (of the user's PIN or password) enters the HMAC input.
    public let passwordHash: HashAlgorithm?
    /// `Snnn`: how many bytes of session information enter the HMAC input.
    public let sessionLength: Int?
    /// `TG`: the time step in seconds.
    public let timeStepSeconds: Int?

    var textBytes: [UInt8] { Array(text.utf8) }

    public var description: String { text }

    public init(_ text: String) throws(OCRAError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw Self.failure("the OCRA suite is empty") }
        guard bytes.count <= Self.maximumTextLength else {
            throw Self.failure("an OCRA suite has at most \(Self.maximumTextLength) characters (got \(bytes.count))")
        }
        for byte in bytes where byte <= 0x20 || byte >= 0x7f {
            throw Self.failure("an OCRA suite is printable ASCII without spaces")
        }
        let parts = Self.split(bytes, on: UInt8(ascii: ":"))
        guard parts.count == 3 else {
            throw Self.failure("an OCRA suite has three parts separated by ':' (Algorithm:CryptoFunction:DataInput, "
                + "e.g. OCRA-1:HOTP-SHA1-6:QN08); \"\(text)\" has \(parts.count)")
        }
        guard parts[0] == Array("OCRA-1".utf8) else {
            throw Self.failure("unsupported algorithm \"\(Self.string(parts[0]))\": only OCRA-1 is defined")
        }

        // CryptoFunction: HOTP-H-t.
        let function = Self.split(parts[1], on: UInt8(ascii: "-"))
        guard function.count == 3, function[0] == Array("HOTP".utf8) else {
            throw Self.failure("the crypto function must be HOTP-SHA1-t, HOTP-SHA256-t or HOTP-SHA512-t "
                + "(got \"\(Self.string(parts[1]))\")")
        }
        guard let algorithm = Self.hash(named: function[1]) else {
            throw Self.failure("the crypto function's hash must be SHA1, SHA256 or SHA512 (got \"\(Self.string(function[1]))\")")
        }
        guard function[2].count <= 2, let digits = Self.decimal(function[2]), Self.digitChoices.contains(digits) else {
            throw Self.failure("the crypto function's digits must be 0 (no truncation) or 4–10 "
                + "(got \"\(Self.string(function[2]))\")")
        }

        // DataInput: [C-]QFxx[-PH][-Snnn][-TG], each at most once and in this order.
        var usesCounter = false
        var question: (format: QuestionFormat, length: Int)?
        var passwordHash: HashAlgorithm?
        var sessionLength: Int?
        var timeStep: Int?
        var stage = 0 // 1 C, 2 Q, 3 P, 4 S, 5 T: the last one seen
        for element in Self.split(parts[2], on: UInt8(ascii: "-")) {
            guard let letter = element.first else {
                throw Self.failure("the data input \"\(Self.string(parts[2]))\" has an empty part")
            }
            let rest = Array(element.dropFirst())
            let elementStage: Int
            switch letter {
            case UInt8(ascii: "C"):
                elementStage = 1
                guard rest.isEmpty else { throw Self.failure("the counter input is just \"C\" (got \"\(Self.string(element))\")") }
                usesCounter = true
            case UInt8(ascii: "Q"):
                elementStage = 2
                question = try Self.parseQuestion(element)
            case UInt8(ascii: "P"):
                elementStage = 3
                if rest.isEmpty {
                    passwordHash = .sha1
                } else if let hash = Self.hash(named: rest) {
                    passwordHash = hash
                } else {
                    throw Self.failure("the password input must be PSHA1, PSHA256 or PSHA512 (got \"\(Self.string(element))\")")
                }
            case UInt8(ascii: "S"):
                elementStage = 4
                if rest.isEmpty {
                    sessionLength = 64
                } else if rest.count == 3, let length = Self.decimal(rest), Self.sessionLengthRange.contains(length) {
                    sessionLength = length
                } else {
                    throw Self.failure("the session input must be S followed by three digits, 001–999 bytes "
                        + "(got \"\(Self.string(element))\")")
                }
            case UInt8(ascii: "T"):
                elementStage = 5
                timeStep = try Self.parseTimeStep(element)
            default:
                throw Self.failure("unknown data input \"\(Self.string(element))\": the parts are C, QFxx, PH, Snnn and TG")
            }
            guard elementStage > stage else {
                throw Self.failure("the data input \"\(Self.string(parts[2]))\" must list C, Q, P, S, T at most once each "
                    + "and in that order")
            }
            stage = elementStage
        }
        guard let question else {
            throw Self.failure("the data input \"\(Self.string(parts[2]))\" has no challenge (QFxx, e.g. QN08)")
        }

        self.text = text
        self.algorithm = algorithm
        self.digits = digits
        self.usesCounter = usesCounter
        self.questionFormat = question.format
        self.questionLength = question.length
        self.passwordHash = passwordHash
        self.sessionLength = sessionLength
        self.timeStepSeconds = timeStep
    }

    /// The `T` value for a moment: whole time steps since the Unix epoch. Nil for suites
    /// without `T` and for times before the epoch.
    public func timeStep(unixTime: Int64) -> UInt64? {
        guard let step = timeStepSeconds, step > 0, unixTime >= 0 else { return nil }
        return UInt64(unixTime / Int64(step))
    }

    /// Whether the login's challenge space is large enough that a challenge comes up again
    /// only by a chance an attacker cannot wait for: at least 10^8 challenges — 8 decimal
    /// digits, 7 hex digits or 6 letters and digits (`safeChallengeRule`). Each challenge is
    /// issued by the verifier and counted as an attempt (docs/security.md, "OCRA challenges").
    public var hasSafeChallengeSpace: Bool {
        switch questionFormat {
        case .numeric: questionLength >= 8
        case .hexadecimal: questionLength >= 7
        case .alphanumeric: questionLength >= 6
        }
    }

    public static let safeChallengeRule = "challenges of at least 8 digits (QN08), 7 hex digits (QH07) or 6 letters and digits (QA06)"

    /// Neither a counter nor a time step: only the challenge makes a response single-use.
    public var isChallengeOnly: Bool { !usesCounter && timeStepSeconds == nil }

    /// Whether a token of this suite may answer a login: a counter or a time step makes every
    /// response single-use whatever the challenge; without them the challenge space must be
    /// safe. (New tokens need a safe space in any case: `NewToken.problem`.)
    public var isSafeAtLogin: Bool { !isChallengeOnly || hasSafeChallengeSpace }

    /// A fresh challenge of this suite's format with the most characters it allows (`xx`),
    /// from kernel randomness. Nil only if the kernel gives no randomness.
    public func randomChallenge() -> String? {
        SecretBytes.random(count: 32).flatMap { challenge(derivedFrom: $0) }
    }

    /// The challenge that `seed` stands for, with the most characters this suite allows:
    /// decimal digits, letters and digits, or lowercase hex digits, drawn without modulo bias
    /// from HMAC-SHA256(seed, block number). A validator derives the challenge of a pending
    /// OCRA challenge from its random id this way, so the id alone names it. Nil only in the
    /// (negligible) case that 64 blocks do not yield enough characters.
    public func challenge(derivedFrom seed: SecretBytes) -> String? {
        let alphabet: [UInt8]
        switch questionFormat {
        case .numeric: alphabet = Array("0123456789".utf8)
        case .hexadecimal: alphabet = Array("0123456789abcdef".utf8)
        case .alphanumeric: alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        }
        // Bytes at or above the largest multiple of the alphabet size are redrawn.
        let limit = 256 - 256 % alphabet.count
        var out = [UInt8]()
        out.reserveCapacity(questionLength)
        var block: UInt8 = 0
        while out.count < questionLength {
            guard block < 64 else { return nil }
            for byte in HMAC.authenticate(.sha256, key: seed, message: [block]) where Int(byte) < limit && out.count < questionLength {
                out.append(alphabet[Int(byte) % alphabet.count])
            }
            block += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func == (a: OCRASuite, b: OCRASuite) -> Bool { a.text == b.text }

    // MARK: - Parsing helpers

    private static func failure(_ message: String) -> OCRAError { OCRAError(.suite, message) }

    /// `QFxx`: exactly two digits, 04–64.
    private static func parseQuestion(_ element: [UInt8]) throws(OCRAError) -> (format: QuestionFormat, length: Int) {
        let problem = failure("the challenge input must be QA, QN or QH followed by two digits 04–64, e.g. QN08 "
            + "(got \"\(string(element))\")")
        guard element.count == 4 else { throw problem }
        let format: QuestionFormat
        switch element[1] {
        case UInt8(ascii: "A"): format = .alphanumeric
        case UInt8(ascii: "N"): format = .numeric
        case UInt8(ascii: "H"): format = .hexadecimal
        default: throw problem
        }
        guard let length = decimal(element[2...]), questionLengthRange.contains(length) else { throw problem }
        return (format, length)
    }

    /// `TG`: `T` alone is one minute; otherwise one or two digits and a unit S, M or H.
    private static func parseTimeStep(_ element: [UInt8]) throws(OCRAError) -> Int {
        guard element.count > 1 else { return 60 }
        let problem = failure("the timestamp input must be T followed by 1–59S, 1–59M or 1–48H, e.g. T1M "
            + "(got \"\(string(element))\")")
        guard element.count <= 4, let unit = element.last else { throw problem }
        let number = element.dropFirst().dropLast()
        guard !number.isEmpty, let count = decimal(number) else { throw problem }
        let seconds: Int
        let most: Int
        switch unit {
        case UInt8(ascii: "S"): seconds = 1; most = 59
        case UInt8(ascii: "M"): seconds = 60; most = 59
        case UInt8(ascii: "H"): seconds = 3600; most = 48
        default: throw problem
        }
        guard count >= 1, count <= most else { throw problem }
        return count * seconds
    }

    private static func hash(named name: [UInt8]) -> HashAlgorithm? {
        if name == Array("SHA1".utf8) { return .sha1 }
        if name == Array("SHA256".utf8) { return .sha256 }
        if name == Array("SHA512".utf8) { return .sha512 }
        return nil
    }

    /// A short run of ASCII digits (at most 3, so no overflow); nil for anything else.
    private static func decimal(_ digits: some Collection<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 3 else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// Splits at every separator, keeping empty parts (so `a::b` has three).
    private static func split(_ bytes: [UInt8], on separator: UInt8) -> [[UInt8]] {
        var parts: [[UInt8]] = [[]]
        for byte in bytes {
            if byte == separator {
                parts.append([])
            } else {
                parts[parts.count - 1].append(byte)
            }
        }
        return parts
    }

    private static func string(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
