import Foundation
import SecurOTPCore
import Testing

/// An independent OCRA implementation, PyPI `oath` (the one Tests/Vectors/ocra.json was checked
/// with), run on random keys, challenges, counters, PINs, sessions and timestamps made at test
/// time. Needs `python3` with `oath` installed (`pip install oath`); without it the test fails
/// and says so.
enum OCRAOracle {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads a JSON list of cases on stdin, prints a JSON list of results. For each case, the
    /// PIN is hashed by hashlib (so Swift gets the digest from outside too) and oath hashes it
    /// again itself (oath 1.4.5's P_digest path is broken: it asks hashlib's constructor for
    /// `digest_size`). For t = 0, oath's own output is its 31-bit value in decimal, not the
    /// whole HMAC, so the oracle takes oath's HMAC input and computes the HMAC with hmac.
    static let script = #"""
    import sys, json, hmac, hashlib
    from oath import _ocra
    out = []
    for case in json.load(sys.stdin):
        suite = _ocra.str2ocrasuite(case["suite"])
        args = {}
        if "counter" in case: args["C"] = int(case["counter"])
        if case.get("mutual"): args["Qsc"] = case["question"]
        else: args["Q"] = case["question"]
        pin_digest = None
        if "pin" in case:
            args["P"] = case["pin"]
            pin_digest = suite.data_input.P(case["pin"].encode()).hexdigest()
        if "session" in case: args["S"] = bytes.fromhex(case["session"])
        if "timestamp" in case: args["T_precomputed"] = int(case["timestamp"])
        key = bytes.fromhex(case["key"])
        if suite.crypto_function.truncation_length:
            response = suite(key, **args)
        else:
            message = case["suite"].encode("ascii") + b"\0" + suite.data_input(**args)
            response = hmac.new(key, message, suite.crypto_function.hash_algo).hexdigest()
        out.append({"response": response, "pin_digest": pin_digest})
    print(json.dumps(out))
    """#

    static func run(_ cases: [[String: Any]]) throws -> [[String: Any]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw Failure(description: "cannot run python3 (\(error)): install Python 3 and `pip install oath`")
        }
        let request = try JSONSerialization.data(withJSONObject: cases)
        // Write on another thread while this one drains stdout, so neither pipe can fill up.
        let writer = Thread {
            input.fileHandleForWriting.write(request)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let message = String(decoding: stderr, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            if message.contains("No module named 'oath'") {
                throw Failure(description: "the Python package oath is missing: `pip install oath` to run the OCRA oracle test")
            }
            throw Failure(description: "python3 exited \(process.terminationStatus): \(message)")
        }
        guard let results = try JSONSerialization.jsonObject(with: stdout) as? [[String: Any]] else {
            throw Failure(description: "unexpected output from the oracle: \(String(decoding: stdout, as: UTF8.self))")
        }
        return results
    }
}

@Suite struct OCRAOracleTests {
    /// Suites covering every hash, digit count (0, 4–10), question format and data input.
    static let suites = [
        "OCRA-1:HOTP-SHA1-6:QN08",
        "OCRA-1:HOTP-SHA256-8:C-QN08-PSHA1",
        "OCRA-1:HOTP-SHA512-8:QN08-T1M",
        "OCRA-1:HOTP-SHA256-8:QA08",
        "OCRA-1:HOTP-SHA512-8:C-QN08",
        "OCRA-1:HOTP-SHA1-4:QH40",
        "OCRA-1:HOTP-SHA256-5:QN64-PSHA512",
        "OCRA-1:HOTP-SHA512-7:C-QA64-PSHA256-S128-T30S",
        "OCRA-1:HOTP-SHA1-9:QN16-S001-T48H",
        "OCRA-1:HOTP-SHA256-10:C-QH64-PSHA1-S064-T5M",
        "OCRA-1:HOTP-SHA1-0:C-QA10",
        "OCRA-1:HOTP-SHA512-0:QH16-PSHA512-S032-T1H",
    ]

    @Test func randomInputsAgreeWithPythonOath() throws {
        var generator = SystemRandomNumberGenerator()
        func randomBytes(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        }
        func randomText(_ alphabet: String, _ count: Int) -> String {
            let characters = Array(alphabet.utf8)
            return String(decoding: (0..<count).map { _ in characters.randomElement(using: &generator) ?? 48 }, as: UTF8.self)
        }

        struct Case {
            var suite: OCRASuite
            var key: [UInt8]
            var question: String
            var mutual: Bool
            var counter: UInt64?
            var pin: String?
            var session: [UInt8]?
            var timestamp: UInt64?
        }
        var cases: [Case] = []
        for text in Self.suites {
            let suite = try OCRASuite(text)
            for round in 0..<8 {
                let mutual = round % 4 == 3
                let most = suite.questionLength * (mutual ? 2 : 1)
                var length = Int.random(in: (mutual ? 8 : 4)...most, using: &generator)
                let question: String
                switch suite.questionFormat {
                case .numeric:
                    question = randomText("0123456789", length)
                case .alphanumeric:
                    question = round == 0 ? try #require(suite.randomChallenge())
                        : randomText("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", length)
                case .hexadecimal:
                    if length % 2 == 1 { length -= 1 } // oath's bytes.fromhex needs whole bytes
                    question = randomText("0123456789abcdefABCDEF", length)
                }
                cases.append(Case(
                    suite: suite,
                    key: randomBytes(Int.random(in: 16...80, using: &generator)),
                    question: round == 1 && suite.questionFormat == .numeric ? "0000" + question.dropFirst(4) : question,
                    mutual: mutual,
                    counter: suite.usesCounter ? (round == 2 ? .max : UInt64.random(in: 0...UInt64.max, using: &generator)) : nil,
                    pin: suite.passwordHash != nil ? randomText("0123456789", Int.random(in: 4...12, using: &generator)) : nil,
                    session: suite.sessionLength.map { randomBytes($0) },
                    timestamp: suite.timeStepSeconds != nil ? UInt64.random(in: 0...UInt64.max, using: &generator) : nil))
            }
        }

        let request: [[String: Any]] = cases.map { item in
            var entry: [String: Any] = [
                "suite": item.suite.text, "key": Hex.encode(item.key), "question": item.question, "mutual": item.mutual,
            ]
            if let counter = item.counter { entry["counter"] = String(counter) }
            if let pin = item.pin { entry["pin"] = pin }
            if let session = item.session { entry["session"] = Hex.encode(session) }
            if let timestamp = item.timestamp { entry["timestamp"] = String(timestamp) }
            return entry
        }
        let results = try OCRAOracle.run(request)
        try #require(results.count == cases.count)

        for (item, result) in zip(cases, results) {
            let expected = try #require(result["response"] as? String)
            let pinHash = try (result["pin_digest"] as? String).map { try #require(Hex.decode($0)) }
            let response = try OCRA.response(
                suite: item.suite, key: SecretBytes(copying: item.key), counter: item.counter, question: item.question,
                passwordHash: pinHash, session: item.session, timestamp: item.timestamp, mutual: item.mutual)
            #expect(String(decoding: response, as: UTF8.self) == expected,
                    "suite \(item.suite) key \(Hex.encode(item.key)) Q \(item.question) mutual \(item.mutual)")
        }
        print("OCRA oracle: \(cases.count) random cases over \(Self.suites.count) suites agree with PyPI oath")
    }
}
