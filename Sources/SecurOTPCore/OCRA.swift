import COpenSSL

/// OCRA, the OATH challenge-response algorithm (RFC 6287):
/// `OCRA(K, suite, C, Q, P, S, T) = Truncate(HMAC-H(K, suite ‖ 0x00 ‖ C ‖ Q ‖ P ‖ S ‖ T))`.
///
/// The HMAC input (RFC 6287 §5): the suite string's ASCII bytes, one 0x00 byte, then only the
/// parts the suite names: `C` the counter as 8 bytes big-endian; `Q` the challenge, always 128
/// bytes (below); `P` the PIN/password hash; `S` the session information; `T` the number of
/// time steps as 8 bytes big-endian.
///
/// The challenge's 128 bytes: numeric (`QN`) — the decimal number written in hexadecimal and
/// left-aligned nibble by nibble (an odd count of hex digits ends in half a byte), zero-filled;
/// alphanumeric (`QA`) — the ASCII characters, zero-filled; hexadecimal (`QH`) — the hex digits
/// left-aligned nibble by nibble, zero-filled.
public enum OCRA {
    /// The fewest characters a challenge may have (the smallest `xx` a suite can declare).
    public static let minimumQuestionLength = 4

    /// The response for one challenge.
    ///
    /// - Parameters:
    ///   - counter: required by, and only accepted for, suites with `C`.
    ///   - question: the challenge in the suite's format, 4 to `xx` characters. Numeric: digits
    ///     0–9; alphanumeric: ASCII letters and digits; hexadecimal: 0–9, a–f, A–F.
    ///   - passwordHash: the PIN/password hash for suites with `P`: exactly as many bytes as the
    ///     suite's hash gives (20, 32 or 64).
    ///   - session: the session information for suites with `S`: exactly `nnn` bytes.
    ///   - timestamp: the `T` value for suites with `T`: time steps since the epoch, as from
    ///     `OCRASuite.timeStep(unixTime:)`.
    ///   - mutual: the question is two challenges joined (mutual challenge-response, RFC 6287
    ///     §7.2: the server's response is over `QC ‖ QS`, the client's over `QS ‖ QC`), so it
    ///     may have up to twice `xx` characters, and has at least twice the minimum.
    /// - Returns: ASCII. For 4–10 digits, the HOTP dynamic truncation of the HMAC (RFC 4226
    ///   §5.3) modulo 10^digits, left-padded with zeros. For 0 digits (no truncation), the whole
    ///   HMAC as lowercase hexadecimal (40, 64 or 128 characters).
    public static func response(suite: OCRASuite, key: SecretBytes, counter: UInt64? = nil, question: String,
                                passwordHash: [UInt8]? = nil, session: [UInt8]? = nil, timestamp: UInt64? = nil,
                                mutual: Bool = false) throws(OCRAError) -> [UInt8] {
        guard key.count > 0 else { throw OCRAError(.key, "the OCRA key is empty") }
        let message = try dataInput(suite: suite, counter: counter, question: question, passwordHash: passwordHash,
                                    session: session, timestamp: timestamp, mutual: mutual)
        let mac = SecretBytes(count: 64)
        let length = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                mac.withUnsafeMutableBytes { out in
                    securotp_hmac(suite.algorithm.cIdentifier, keyBytes.baseAddress, keyBytes.count,
                                  messageBytes.baseAddress, messageBytes.count, out.baseAddress)
                }
            }
        }
        guard length >= 20, length <= 64 else { throw OCRAError(.crypto, "HMAC-\(suite.algorithm.name) failed") }
        return mac.withUnsafeBytes { bytes in
            let hmac = UnsafeBufferPointer(rebasing: bytes[0..<length])
            return suite.digits == 0 ? hexadecimal(hmac) : truncate(hmac, digits: suite.digits)
        }
    }

    /// The HMAC input for a response (RFC 6287 §5), in a buffer that is wiped when released
    /// (it holds the password hash). Every part is checked against the suite first.
    public static func dataInput(suite: OCRASuite, counter: UInt64?, question: String, passwordHash: [UInt8]?,
                                 session: [UInt8]?, timestamp: UInt64?, mutual: Bool = false) throws(OCRAError) -> SecretBytes {
        switch (suite.usesCounter, counter) {
        case (true, nil): throw OCRAError(.counter, "the suite \(suite) needs a counter (C)")
        case (false, .some): throw OCRAError(.counter, "the suite \(suite) has no counter (C), but one was given")
        default: break
        }
        let passwordLength = suite.passwordHash.map(digestLength)
        switch (passwordLength, passwordHash) {
        case (.some(let length), nil):
            throw OCRAError(.passwordHash, "the suite \(suite) needs a \(length)-byte PIN/password hash (P)")
        case (nil, .some):
            throw OCRAError(.passwordHash, "the suite \(suite) has no PIN/password hash (P), but one was given")
        case (.some(let length), .some(let hash)) where hash.count != length:
            throw OCRAError(.passwordHash, "the suite \(suite) needs a \(length)-byte PIN/password hash (got \(hash.count) bytes)")
        default: break
        }
        switch (suite.sessionLength, session) {
        case (.some(let length), nil):
            throw OCRAError(.session, "the suite \(suite) needs \(length) bytes of session information (S)")
        case (nil, .some):
            throw OCRAError(.session, "the suite \(suite) has no session information (S), but some was given")
        case (.some(let length), .some(let bytes)) where bytes.count != length:
            throw OCRAError(.session, "the suite \(suite) needs exactly \(length) bytes of session information "
                + "(got \(bytes.count))")
        default: break
        }
        switch (suite.timeStepSeconds, timestamp) {
        case (.some, nil): throw OCRAError(.timestamp, "the suite \(suite) needs a timestamp (T)")
        case (nil, .some): throw OCRAError(.timestamp, "the suite \(suite) has no timestamp (T), but one was given")
        default: break
        }
        let questionBlock = try encodeQuestion(question, suite: suite, mutual: mutual)

        let suiteBytes = suite.textBytes
        var length = suiteBytes.count + 1 + questionBlock.count
        if counter != nil { length += 8 }
        if let passwordHash { length += passwordHash.count }
        if let session { length += session.count }
        if timestamp != nil { length += 8 }

        let message = SecretBytes(count: length)
        message.withUnsafeMutableBytes { buffer in
            var writer = Writer(buffer: buffer)
            writer.append(suiteBytes)
            writer.append(0)
            if let counter { writer.appendBigEndian(counter) }
            writer.append(questionBlock)
            if let passwordHash { writer.append(passwordHash) }
            if let session { writer.append(session) }
            if let timestamp { writer.appendBigEndian(timestamp) }
        }
        return message
    }

    /// The 128-byte challenge block (RFC 6287 §5), after checking length and characters.
    public static func encodeQuestion(_ question: String, suite: OCRASuite, mutual: Bool = false) throws(OCRAError) -> [UInt8] {
        let characters = Array(question.utf8)
        let parts = mutual ? 2 : 1
        let fewest = minimumQuestionLength * parts
        let most = suite.questionLength * parts
        let what = mutual ? "a mutual challenge (two joined)" : "a challenge"
        guard characters.count >= fewest else {
            throw OCRAError(.question, "\(what) has at least \(fewest) characters (got \(characters.count))")
        }
        guard characters.count <= most else {
            throw OCRAError(.question, "\(what) for \(suite) has at most \(most) characters (got \(characters.count))")
        }
        var block = [UInt8](repeating: 0, count: questionBlockLength)
        switch suite.questionFormat {
        case .alphanumeric:
            for (index, character) in characters.enumerated() {
                guard isAlphanumeric(character), index < block.count else {
                    throw OCRAError(.question, "an alphanumeric challenge has only the letters A–Z, a–z and digits 0–9")
                }
                block[index] = character
            }
        case .hexadecimal:
            for (index, character) in characters.enumerated() {
                guard let value = nibble(character), index < 2 * block.count else {
                    throw OCRAError(.question, "a hexadecimal challenge has only the digits 0–9, a–f and A–F")
                }
                setNibble(&block, at: index, to: value)
            }
        case .numeric:
            for character in characters where character < UInt8(ascii: "0") || character > UInt8(ascii: "9") {
                throw OCRAError(.question, "a numeric challenge has only the digits 0–9")
            }
            guard let number = bigEndianNumber(decimal: characters) else {
                throw OCRAError(.question, "a numeric challenge is too large for 128 bytes")
            }
            // The hex digits of the number without leading zeros, moved to the front.
            let totalNibbles = 2 * number.count
            var first = 0
            while first < totalNibbles, nibble(of: number, at: first) == 0 { first += 1 }
            var index = first
            while index < totalNibbles {
                setNibble(&block, at: index - first, to: nibble(of: number, at: index))
                index += 1
            }
        }
        return block
    }

    // MARK: - Internals

    static let questionBlockLength = 128

    static func digestLength(_ algorithm: HashAlgorithm) -> Int {
        switch algorithm {
        case .sha1: 20
        case .sha256: 32
        case .sha512: 64
        }
    }

    /// HOTP dynamic truncation (RFC 4226 §5.3, the offset from the last byte's low nibble for
    /// every hash), then the low `digits` decimal digits, zero-padded.
    static func truncate(_ mac: UnsafeBufferPointer<UInt8>, digits: Int) -> [UInt8] {
        guard let last = mac.last, mac.count >= 20, digits >= 1, digits <= 10 else { return [] }
        let offset = Int(last & 0x0f)
        var binary: UInt64 = 0
        for index in offset..<(offset + 4) where index < mac.count { binary = binary << 8 | UInt64(mac[index]) }
        binary &= 0x7fff_ffff
        return DecimalDigits.low(binary, count: digits)
    }

    static func hexadecimal(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(2 * bytes.count)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return out
    }

    /// A decimal number (digits only, already checked) as 128 bytes big-endian; nil if it does
    /// not fit.
    static func bigEndianNumber(decimal digits: [UInt8]) -> [UInt8]? {
        var number = [UInt8](repeating: 0, count: questionBlockLength)
        for digit in digits {
            var carry = UInt16(digit &- UInt8(ascii: "0"))
            var index = number.count - 1
            while index >= 0 {
                let value = UInt16(number[index]) &* 10 &+ carry
                number[index] = UInt8(truncatingIfNeeded: value)
                carry = value >> 8
                index -= 1
            }
            guard carry == 0 else { return nil }
        }
        return number
    }

    private static func nibble(of bytes: [UInt8], at index: Int) -> UInt8 {
        guard index >= 0, index / 2 < bytes.count else { return 0 }
        let byte = bytes[index / 2]
        return index % 2 == 0 ? byte >> 4 : byte & 0x0f
    }

    private static func setNibble(_ bytes: inout [UInt8], at index: Int, to value: UInt8) {
        guard index >= 0, index / 2 < bytes.count else { return }
        if index % 2 == 0 {
            bytes[index / 2] = bytes[index / 2] & 0x0f | (value & 0x0f) << 4
        } else {
            bytes[index / 2] = bytes[index / 2] & 0xf0 | value & 0x0f
        }
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isAlphanumeric(_ character: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(character)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(character)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(character)
    }

    /// Fills a buffer front to back; never writes past its end.
    private struct Writer {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var position = 0

        init(buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func append(_ byte: UInt8) {
            guard position < buffer.count else { return }
            buffer[position] = byte
            position += 1
        }

        mutating func append(_ bytes: [UInt8]) {
            for byte in bytes { append(byte) }
        }

        mutating func appendBigEndian(_ value: UInt64) {
            var shift: UInt64 = 56
            for _ in 0..<8 {
                append(UInt8(truncatingIfNeeded: value >> shift))
                shift &-= 8
            }
        }
    }
}
