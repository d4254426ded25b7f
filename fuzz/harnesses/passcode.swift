// What the PAM module does with what a user types (SecurOTPStore): Store.verify (recovery
// codes, every token kind, PIN modes, the window and the resync band, forward_pass's
// password+code), Store.verifyNextCode, and PasscodeMatcher on its own.
//
// The store is real: a state directory in $FUZZ_TMPDIR (run.sh makes one under /dev/shm and
// removes it), else /dev/shm or /tmp, removed at exit, with one user holding a TOTP,
// an HOTP, a fob-style and a PINPad SecurID token (PIN 1234; the seeds of tokens B and A of
// Tests/Vectors/securid.json) and an OCRA token (key and challenge of an ocra.json vector), and
// a recovery code, at a fixed time. Every answer that may be accepted is worked out here, from
// the seeds, without the store; the corpus holds the right answers (from the vectors and
// fuzz/corpus/generate.py), so acceptance is explored too.
//
// Input: byte 0 picks the path (0 verify, 1 verifyNextCode, 2 PasscodeMatcher), byte 1 holds
// flags (bit 0 forward_pass, bit 1 no OCRA challenge shown, bits 2–4 the token for the next
// code), the rest is the answer (at most 1024 bytes, as the module reads).
// Properties: an answer is accepted exactly when it is one of the right answers (a code in the
// window, with its PIN in front or added in; the recovery code; the next code after the one
// asked about); "outside the window" only for a code of the resync band; never a lock (deny=0),
// a replay (nothing was used) or a new-PIN demand (the PINs are set); the store never throws.
// PasscodeMatcher agrees with a reference written here from its documented rules, including:
// an empty code never matches.
import FuzzSupport
import Glibc
@testable import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPEngine
@testable import SecurOTPStore

private let now: Int64 = 1_700_000_000
private let user = "alice"
private let pin = Array("1234".utf8)
private let challenge = "00000000"
private let recoveryCode = Array("abcd-efgh-jkmn".utf8)
private let policy: VerifyPolicy = {
    var policy = VerifyPolicy()
    policy.deny = 0
    return policy
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPasscode(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(Fuzz.bytes(data, size))
    let path = input.byte() % 3
    let flags = input.byte()
    let answer = input.rest()
    guard answer.count <= 1024 else { return 0 } // PAMAuthentication.maxInput refuses longer answers first
    switch path {
    case 0: checkVerify(answer, codeAtEnd: flags & 1 != 0, challenge: flags & 2 == 0 ? challenge : nil)
    case 1: checkNextCode(answer, token: fixture.tokens[Int(flags >> 2 & 7) % fixture.tokens.count])
    default: checkMatcher(answer, flags: flags)
    }
    return 0
}

// MARK: - the store

/// One token and its right answers at `now`, worked out without the store.
struct ExpectedToken {
    let serial: String
    let digits: Int
    let isOCRA: Bool
    let isFob: Bool
    /// Answers accepted in the window (PIN included as the token's PIN mode wants).
    let window: Set<[UInt8]>
    /// Answers that start the next-code dialogue (right, but outside the window).
    let band: Set<[UInt8]>
    /// The position verifyNextCode is asked about, and the answer that follows it.
    let position: Int64
    let next: [UInt8]?
}

struct Fixture {
    let store: Store
    let tokens: [ExpectedToken]
}

private let fixture: Fixture = {
    do {
        return try makeFixture()
    } catch {
        fputs("passcode harness: cannot set up the store: \(error)\n", stderr)
        exit(1)
    }
}()

private func makeFixture() throws -> Fixture {
    let parent = getenv("FUZZ_TMPDIR").map { String(cString: $0) } ?? (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp")
    var template = Array((parent + "/securotp-fuzz-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw StoreError(.system, "mkdtemp in \(parent) failed") }
    let directory = String(cString: made)
    stateDirectory = directory
    atexit { removeStateDirectory() }
    let store = try Store.open(StorePaths(stateDirectory: directory), .create)

    let totpSeed = SecretBytes(copying: Array("12345678901234567890".utf8))
    let hotpSeed = SecretBytes(copying: Array("12345678901234567890123456789012".utf8))
    let fobSeed = SecretBytes(copying: Fuzz.bytes(fromHex: "0f1e2d3c4b5a69788796a5b4c3d2e1f0"))   // vector token B
    let pinpadSeed = SecretBytes(copying: Fuzz.bytes(fromHex: "00112233445566778899aabbccddeeff")) // vector token A
    let ocraSeed = SecretBytes(copying: Array("12345678901234567890".utf8))
    let ocraSuite = try OCRASuite("OCRA-1:HOTP-SHA1-6:QN08")
    _ = try store.add([
        NewToken(kind: .totp, parameters: OATHParameters(kind: .totp), seed: totpSeed, serial: "1000000001"),
        NewToken(kind: .hotp, parameters: OATHParameters(kind: .hotp, algorithm: .sha256, digits: 8), seed: hotpSeed, serial: "1000000002"),
        NewToken(kind: .securid, parameters: OATHParameters(kind: .totp, digits: 8, period: 60), seed: fobSeed,
                 serial: "000123456789", pinMode: .prefix, source: "ctf"),
        NewToken(kind: .securid, parameters: OATHParameters(kind: .totp, digits: 6, period: 30), seed: pinpadSeed,
                 serial: "987654321098", pinMode: .addedByToken, source: "ctf"),
        NewToken(kind: .ocra, parameters: OATHParameters(kind: .hotp, digits: 6), seed: ocraSeed, serial: "1000000005",
                 suite: ocraSuite.text),
    ], user: user, maxTokens: 10, now: now - 100)
    // PINs and the recovery code as the store keeps them, at the lowest iteration count it reads.
    guard let pinHash = pin.withUnsafeBufferPointer({ SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) }),
          let recoveryHash = recoveryCode.withUnsafeBufferPointer({ SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) })
    else { throw StoreError(.system, "no randomness for the salts") }
    try store.db.prepare("UPDATE tokens SET pin_hash = ?, pin_length = 4 WHERE serial IN ('000123456789', '987654321098')")
        .bind(.blob(pinHash)).run()
    try store.db.prepare("INSERT INTO recovery_codes (user, id, hash, created) VALUES (?, 'abcd', ?, ?)")
        .bind(.text(user), .blob(recoveryHash), .integer(now)).run()

    func oath(_ seed: SecretBytes, _ counter: Int64, _ digits: Int, _ algorithm: HashAlgorithm) -> [UInt8] {
        OTP.hotp(secret: seed, counter: UInt64(counter), digits: digits, algorithm: algorithm)
    }
    func securID(_ seed: SecretBytes, _ serial: String, _ digits: Int, _ interval: Int, _ step: Int64) -> [UInt8] {
        SecurIDToken(serial: serial, seed: seed, parameters: SecurIDParameters(digits: digits, interval: interval, addsPIN: false))
            .tokencode(at: step * Int64(interval))
    }
    /// PINPad: each digit of the PIN (right-aligned, zeros in front) added to the code's, mod 10.
    func added(_ code: [UInt8]) -> [UInt8] {
        let padded = [UInt8](repeating: UInt8(ascii: "0"), count: max(0, code.count - pin.count)) + pin
        return zip(code, padded).map { UInt8(ascii: "0") + ($0 - 48 + $1 - 48) % 10 }
    }
    let window = Int64(policy.window), reach = Int64(policy.resyncWindow), ahead = Int64(policy.hotpLookahead)
    let totpStep = now / 30, fobStep = now / 60
    let near = (-window...window), far = Array((-reach)...(-window - 1)) + Array((window + 1)...reach)
    let ocraResponse = try OCRA.response(suite: ocraSuite, key: ocraSeed, question: challenge)
    let tokens = [
        ExpectedToken(serial: "1000000001", digits: 6, isOCRA: false, isFob: false,
                      window: Set(near.map { oath(totpSeed, totpStep + $0, 6, .sha1) }),
                      band: Set(far.map { oath(totpSeed, totpStep + $0, 6, .sha1) }),
                      position: totpStep, next: oath(totpSeed, totpStep + 1, 6, .sha1)),
        ExpectedToken(serial: "1000000002", digits: 8, isOCRA: false, isFob: false,
                      window: Set((0...ahead).map { oath(hotpSeed, $0, 8, .sha256) }),
                      band: Set((ahead + 1...ahead + reach).map { oath(hotpSeed, $0, 8, .sha256) }),
                      position: 0, next: oath(hotpSeed, 1, 8, .sha256)),
        ExpectedToken(serial: "000123456789", digits: 8, isOCRA: false, isFob: true,
                      window: Set(near.map { pin + securID(fobSeed, "000123456789", 8, 60, fobStep + $0) }),
                      band: Set(far.map { pin + securID(fobSeed, "000123456789", 8, 60, fobStep + $0) }),
                      position: fobStep, next: pin + securID(fobSeed, "000123456789", 8, 60, fobStep + 1)),
        // PINPad answers cost a slow hash per candidate: the store does not look for them in the band.
        ExpectedToken(serial: "987654321098", digits: 6, isOCRA: false, isFob: false,
                      window: Set(near.map { added(securID(pinpadSeed, "987654321098", 6, 30, totpStep + $0)) }), band: [],
                      position: totpStep, next: added(securID(pinpadSeed, "987654321098", 6, 30, totpStep + 1))),
        // Challenge-response has no next code: nothing may complete that dialogue.
        ExpectedToken(serial: "1000000005", digits: 6, isOCRA: true, isFob: false, window: [ocraResponse], band: [],
                      position: 0, next: nil),
    ]
    return Fixture(store: store, tokens: tokens)
}

nonisolated(unsafe) private var stateDirectory: String?

/// The store's files go when libFuzzer exits normally (after a crash, run.sh removes them).
private func removeStateDirectory() {
    guard let directory = stateDirectory else { return }
    for name in ["securotp.db", "securotp.db-wal", "securotp.db-shm", "securotp.key"] { unlink(directory + "/" + name) }
    rmdir(directory)
}

/// Undoes what an accepted answer changed, so every input meets the same store.
private func resetState() {
    do {
        try fixture.store.db.execute("""
            UPDATE tokens SET counter = 0, last_step = -1, drift = 0, last_used = 0;
            UPDATE recovery_codes SET used = 0; DELETE FROM users
            """)
    } catch {
        Fuzz.require(false, "cannot reset the store: \(error.message)")
    }
}

private func token(_ serial: String) -> ExpectedToken? { fixture.tokens.first { $0.serial == serial } }

private func checkVerify(_ answer: [UInt8], codeAtEnd: Bool, challenge: String?) {
    let result: VerifyResult
    do {
        result = try answer.withUnsafeBufferPointer {
            try fixture.store.verify(user: user, input: $0, codeAtEnd: codeAtEnd, policy: policy, now: now, challenge: challenge)
        }
    } catch {
        return Fuzz.require(false, "verify threw: \(error)")
    }
    let shown = String(decoding: answer, as: UTF8.self)
    /// The part of the answer a token compares: all of it, or its last `digits` with forward_pass.
    func passcode(_ token: ExpectedToken) -> [UInt8] { codeAtEnd ? Array(answer.suffix(token.digits)) : answer }
    func isRight(_ token: ExpectedToken) -> Bool {
        (challenge != nil || !token.isOCRA) && !(codeAtEnd && (token.isFob || answer.count < token.digits))
            && token.window.contains(passcode(token))
    }
    let isRecoveryCode = !codeAtEnd && answer.map(RecoveryCodes.lowercased) == recoveryCode
    let anyRight = fixture.tokens.contains(where: isRight)
    switch result.outcome {
    case .accepted(let serial, let digits):
        guard let token = token(serial) else { return Fuzz.require(false, "accepted unknown token \(serial)") }
        Fuzz.require(isRight(token), "\"\(shown)\" (forward_pass \(codeAtEnd)) accepted for token \(serial), but is not one of its answers")
        Fuzz.require(digits == (codeAtEnd ? token.digits : answer.count), "accepted with \(digits) digits")
        resetState()
    case .acceptedRecoveryCode:
        Fuzz.require(isRecoveryCode, "\"\(shown)\" accepted as a recovery code")
        resetState()
    case .nextCodeRequired(let serial, _):
        guard let token = token(serial) else { return Fuzz.require(false, "next code for unknown token \(serial)") }
        Fuzz.require(!anyRight && token.band.contains(passcode(token)), "\"\(shown)\" starts the next-code dialogue for \(serial)")
    case .rejected:
        Fuzz.require(!anyRight && !isRecoveryCode, "right answer \"\(shown)\" (forward_pass \(codeAtEnd)) rejected: \(result.note)")
    case .replayed, .locked, .newPINRequired:
        Fuzz.require(false, "\"\(shown)\": unexpected outcome \(result.outcome)")
    }
}

private func checkNextCode(_ answer: [UInt8], token: ExpectedToken) {
    let result: VerifyResult
    do {
        result = try answer.withUnsafeBufferPointer {
            try fixture.store.verifyNextCode(user: user, serial: token.serial, position: token.position, input: $0, policy: policy, now: now)
        }
    } catch {
        return Fuzz.require(false, "verifyNextCode threw: \(error)")
    }
    let shown = String(decoding: answer, as: UTF8.self)
    switch result.outcome {
    case .accepted(let serial, _):
        Fuzz.require(serial == token.serial && token.next == answer, "\"\(shown)\" accepted as the next code of \(token.serial)")
        resetState()
    case .rejected:
        Fuzz.require(token.next != answer, "the right next code \"\(shown)\" of \(token.serial) rejected: \(result.note)")
    default:
        Fuzz.require(false, "\"\(shown)\": unexpected next-code outcome \(result.outcome)")
    }
}

// MARK: - PasscodeMatcher

private let matcherPINHash: [UInt8] = pin.withUnsafeBufferPointer { SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) } ?? []

/// Byte 1: bits 0–1 the PIN mode, bit 2 no PIN hash, bits 3–6 the PIN length. The answer
/// starts with the candidate codes: a count byte, then a length byte and the code for each.
private func checkMatcher(_ answer: [UInt8], flags: UInt8) {
    let mode: PINMode = [.none, .prefix, .addedByToken][Int(flags & 3) % 3]
    let pinHash = flags & 4 == 0 ? matcherPINHash : []
    let pinLength = Int(flags >> 3 & 15)
    var input = FuzzInput(answer)
    var codes: [(position: Int64, code: [UInt8])] = []
    for index in 0..<Int(input.byte() % 4) {
        let length = Int(input.byte() % 12)
        codes.append((Int64(index), input.bytes(length)))
    }
    let passcode = input.rest()
    let found = passcode.withUnsafeBufferPointer {
        PasscodeMatcher(mode: mode, pinHash: pinHash, pinLength: pinLength, passcode: $0).find(in: codes)
    }
    let expected = referenceFind(mode: mode, hasPINHash: !pinHash.isEmpty, pinLength: pinLength, passcode: passcode, codes: codes.map(\.code))
    Fuzz.require(found == expected, "PasscodeMatcher(\(mode), PIN length \(pinLength), hash \(!pinHash.isEmpty)) on "
                 + "\"\(String(decoding: passcode, as: UTF8.self))\" with codes \(codes.map { String(decoding: $0.code, as: UTF8.self) }): "
                 + "\(found), expected \(expected)")
}

/// The matching rules as documented, with the PIN compared directly instead of through its hash.
private func referenceFind(mode: PINMode, hasPINHash: Bool, pinLength: Int, passcode: [UInt8], codes: [[UInt8]]) -> PasscodeMatcher.Found {
    let isDigit = { (byte: UInt8) in (0x30...0x39).contains(byte) }
    var wrongPIN = false
    for (index, code) in codes.enumerated() where !code.isEmpty {
        switch mode {
        case .none:
            if code == passcode { return .match(position: Int64(index)) }
        case .prefix:
            guard passcode.count > code.count, Array(passcode.suffix(code.count)) == code else { continue }
            if hasPINHash && Array(passcode.prefix(passcode.count - code.count)) == pin { return .match(position: Int64(index)) }
            wrongPIN = true
        case .addedByToken:
            guard passcode.count == code.count, (1...code.count).contains(pinLength),
                  passcode.allSatisfy(isDigit), code.allSatisfy(isDigit) else { continue }
            let difference = zip(passcode, code).map { UInt8(ascii: "0") + (10 + $0 - $1) % 10 }
            let lead = code.count - pinLength
            if difference.prefix(lead).allSatisfy({ $0 == UInt8(ascii: "0") }), hasPINHash, Array(difference.suffix(pinLength)) == pin {
                return .match(position: Int64(index))
            }
        }
    }
    return wrongPIN ? .wrongPIN : .none
}
