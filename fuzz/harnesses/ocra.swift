// OCRA suite strings and challenges (RFC 6287; SecurOTPCore, linked by the PAM module, which
// parses the suite stored with every OCRA token at each login).
//
// Input: the suite on the first line, a challenge on the rest.
// Properties: a parsed suite is in range and keeps its text; the canonical spelling of its
// fields parses to the same fields; its own random challenge is accepted and gives a response
// of the suite's length; encodeQuestion accepts exactly the challenges a check written here
// accepts, and lays them out in the 128-byte block as an independent conversion does.
import FuzzSupport
@testable import SecurOTPCore

private let key = SecretBytes(copying: Array("12345678901234567890123456789012".utf8))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOCRA(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.bytes(data, size)
    let newline = input.firstIndex(of: UInt8(ascii: "\n")) ?? input.endIndex
    let text = String(decoding: input[..<newline], as: UTF8.self)
    let question = String(decoding: input[min(newline + 1, input.endIndex)...], as: UTF8.self)
    let suite: OCRASuite
    do {
        suite = try OCRASuite(text)
    } catch {
        Fuzz.require(error.code == .suite && !error.message.isEmpty, "suite error \(error.code) for \(text)")
        return 0
    }
    checkRanges(suite, text)
    checkCanonicalSpelling(suite)
    checkOwnChallenge(suite)
    for mutual in [false, true] { checkQuestion(question, suite: suite, mutual: mutual) }
    return 0
}

private func checkRanges(_ suite: OCRASuite, _ text: String) {
    Fuzz.require(suite.text == text && suite.description == text, "suite text changed: \(text)")
    Fuzz.require(text.utf8.count <= OCRASuite.maximumTextLength, "over-long suite accepted: \(text)")
    Fuzz.require(OCRASuite.digitChoices.contains(suite.digits), "digits \(suite.digits) in \(text)")
    Fuzz.require(OCRASuite.questionLengthRange.contains(suite.questionLength), "question length in \(text)")
    if let session = suite.sessionLength { Fuzz.require(OCRASuite.sessionLengthRange.contains(session), "session length in \(text)") }
    if let step = suite.timeStepSeconds {
        let allowed = (1...59).contains(step) || (step % 60 == 0 && (1...59).contains(step / 60))
            || (step % 3600 == 0 && (1...48).contains(step / 3600))
        Fuzz.require(allowed, "time step \(step) s in \(text)")
    }
}

/// `OCRA-1:HOTP-H-t:[C-]QFxx[-PH][-Snnn][-TG]` with every default written out.
private func canonical(_ suite: OCRASuite) -> String {
    var data: [String] = []
    if suite.usesCounter { data.append("C") }
    let format = switch suite.questionFormat {
    case .alphanumeric: "A"
    case .numeric: "N"
    case .hexadecimal: "H"
    }
    data.append("Q" + format + padded(suite.questionLength, 2))
    if let hash = suite.passwordHash { data.append("P" + hash.name) }
    if let session = suite.sessionLength { data.append("S" + padded(session, 3)) }
    if let step = suite.timeStepSeconds {
        data.append(step % 3600 == 0 ? "T\(step / 3600)H" : step % 60 == 0 ? "T\(step / 60)M" : "T\(step)S")
    }
    return "OCRA-1:HOTP-\(suite.algorithm.name)-\(suite.digits):" + data.joined(separator: "-")
}

private func padded(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}

private func checkCanonicalSpelling(_ suite: OCRASuite) {
    let spelling = canonical(suite)
    guard let again = try? OCRASuite(spelling) else {
        Fuzz.require(false, "canonical spelling \(spelling) of \(suite.text) does not parse")
        return
    }
    Fuzz.require(again.algorithm == suite.algorithm && again.digits == suite.digits && again.usesCounter == suite.usesCounter
                 && again.questionFormat == suite.questionFormat && again.questionLength == suite.questionLength
                 && again.passwordHash == suite.passwordHash && again.sessionLength == suite.sessionLength
                 && again.timeStepSeconds == suite.timeStepSeconds,
                 "\(suite.text) and its canonical spelling \(spelling) differ")
}

private func checkOwnChallenge(_ suite: OCRASuite) {
    guard let challenge = suite.randomChallenge() else {
        Fuzz.require(false, "no random challenge for \(suite.text)")
        return
    }
    Fuzz.require(challenge.utf8.count == suite.questionLength, "challenge \(challenge) for \(suite.text)")
    Fuzz.require(acceptable(Array(challenge.utf8), suite.questionFormat), "challenge \(challenge) has foreign characters")
    do {
        let response = try respond(suite, challenge)
        if suite.digits == 0 {
            Fuzz.require(response.count == 2 * OCRA.digestLength(suite.algorithm) && response.allSatisfy(ReferenceQuestion.isHex),
                         "untruncated response of \(response.count) bytes for \(suite.text)")
        } else {
            Fuzz.require(response.count == suite.digits && response.allSatisfy { (0x30...0x39).contains($0) },
                         "response \(String(decoding: response, as: UTF8.self)) for \(suite.text)")
        }
    } catch {
        Fuzz.require(false, "no response for \(suite.text) to its own challenge \(challenge): \(error.message)")
    }
}

/// A response with every input the suite asks for, of the right size.
private func respond(_ suite: OCRASuite, _ question: String, mutual: Bool = false) throws(OCRAError) -> [UInt8] {
    try OCRA.response(suite: suite, key: key, counter: suite.usesCounter ? 0x1234_5678_9abc : nil, question: question,
                      passwordHash: suite.passwordHash.map { [UInt8](repeating: 0x5a, count: OCRA.digestLength($0)) },
                      session: suite.sessionLength.map { [UInt8](repeating: 0xa5, count: $0) },
                      timestamp: suite.timeStep(unixTime: 1_700_000_000), mutual: mutual)
}

private func checkQuestion(_ question: String, suite: OCRASuite, mutual: Bool) {
    let characters = Array(question.utf8)
    let parts = mutual ? 2 : 1
    let shouldAccept = characters.count >= OCRA.minimumQuestionLength * parts && characters.count <= suite.questionLength * parts
        && acceptable(characters, suite.questionFormat)
    let block: [UInt8]
    do {
        block = try OCRA.encodeQuestion(question, suite: suite, mutual: mutual)
    } catch {
        Fuzz.require(!shouldAccept && error.code == .question, "\(suite.text) refused challenge \"\(question)\" (mutual \(mutual))")
        return
    }
    Fuzz.require(shouldAccept, "\(suite.text) accepted challenge \"\(question)\" (mutual \(mutual))")
    let expected = ReferenceQuestion.block(characters, suite.questionFormat)
    Fuzz.require(block == expected, "\(suite.text), \"\(question)\": block \(Fuzz.hex(block)), expected \(Fuzz.hex(expected))")
    do {
        _ = try respond(suite, question, mutual: mutual)
    } catch {
        Fuzz.require(false, "\(suite.text): no response to accepted challenge \"\(question)\": \(error.message)")
    }
}

private func acceptable(_ characters: [UInt8], _ format: OCRASuite.QuestionFormat) -> Bool {
    characters.allSatisfy { byte in
        switch format {
        case .numeric: (0x30...0x39).contains(byte)
        case .hexadecimal: ReferenceQuestion.isHex(byte)
        case .alphanumeric: (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
        }
    }
}

/// RFC 6287 §5's 128-byte challenge block, computed another way: the decimal number is turned
/// into hex digits by long division by 16, hex digits are taken as they are, and the digits are
/// packed two to a byte from the front.
enum ReferenceQuestion {
    static func isHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    static func block(_ characters: [UInt8], _ format: OCRASuite.QuestionFormat) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: 128)
        switch format {
        case .alphanumeric:
            for (index, byte) in characters.enumerated() { block[index] = byte }
        case .hexadecimal:
            pack(characters.map(nibble), into: &block)
        case .numeric:
            pack(hexDigits(ofDecimal: characters.map { Int($0 - 0x30) }), into: &block)
        }
        return block
    }

    static func nibble(_ byte: UInt8) -> UInt8 {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        default: byte - 0x61 + 10
        }
    }

    static func pack(_ nibbles: [UInt8], into block: inout [UInt8]) {
        for (index, value) in nibbles.enumerated() {
            block[index / 2] |= index % 2 == 0 ? value << 4 : value
        }
    }

    /// Most significant first, without leading zeros (zero has none).
    static func hexDigits(ofDecimal digits: [Int]) -> [UInt8] {
        var number = Array(digits.drop { $0 == 0 })
        var out: [UInt8] = []
        while !number.isEmpty {
            var quotient: [Int] = []
            var remainder = 0
            for digit in number {
                let value = remainder * 10 + digit
                quotient.append(value / 16)
                remainder = value % 16
            }
            out.append(UInt8(remainder))
            number = Array(quotient.drop { $0 == 0 })
        }
        return out.reversed()
    }
}
