import TestSupport
@testable import SecurOTPCore
@testable import SecurOTPSecurID
@testable import SecurOTPEngine
@testable import SecurOTPStore

extension Scenario {
    /// The next operation, from what the backends hold now (`state`: counters, drift, PIN modes).
    func makeOperation(_ state: StateDump) -> Operation {
        if let pending = pendingNewPIN {
            pendingNewPIN = nil
            if random.chance(80), let row = state.token(pending.serial) {
                let pin = random.digits(4 + random.below(3))
                let hash = pin.withUnsafeBufferPointer { SlowHash.hash($0, iterations: SlowHash.iterationRange.lowerBound) } ?? []
                return .setPIN(user: pending.user, serial: pending.serial, mode: row.pinMode == .none ? .prefix : row.pinMode, pin: pin, hash: hash)
            }
        }
        if let pending = pendingNextCode {
            pendingNextCode = nil
            if random.chance(80), let token = tokens.first(where: { $0.serial == pending.serial }), let row = state.token(token.serial) {
                let position = pending.position + random.pick([1, 1, 1, 2, 0])
                let input = passcode(token, row, code(token, at: position, challenge: nil), wrongPIN: random.chance(10))
                return .nextCode(user: pending.user, serial: pending.serial, position: pending.position, input: input)
            }
        }
        switch random.below(100) {
        case 0..<45: return tokenCode(state)
        case 45..<55:
            guard !accepted.isEmpty else { return wrongCode() }
            let replay = random.pick(accepted)
            return .verify(user: replay.user, input: replay.input, codeAtEnd: replay.codeAtEnd, failureKey: nil, countsFailure: true,
                           challenge: replay.challenge)
        case 55..<67: return wrongCode()
        case 67..<77: return recoveryCode()
        case 77..<84:
            let token = random.pick(tokens)
            return random.chance(60) ? .requirePIN(user: token.user, serial: token.serial) : .clearPIN(user: token.user, serial: token.serial)
        case 84..<93: return resync(state)
        default:
            // Mostly someone with failures, who may be locked.
            let counted = state.users.map { $0[0] }
            return .unlock(user: !counted.isEmpty && random.chance(70) ? random.pick(counted) : random.pick(Self.users + [Store.unresolvedUsersKey]))
        }
    }

    /// A code of one token near where it stands: mostly in the window, sometimes just
    /// outside it or far away, with the right PIN or a wrong one.
    private func tokenCode(_ state: StateDump) -> Operation {
        let token = random.pick(tokens)
        guard let row = state.token(token.serial) else { return wrongCode() }
        let counterLike = token.kind == .hotp || token.suite?.usesCounter == true
        let offset: Int64 = counterLike ? random.pick([0, 0, 0, 1, 2, 3, -1, -2, 10, 11, 12, 30, 60, -11])
                                        : random.pick([0, 0, 0, 0, -1, 1, -2, 2, 3, -3, 5, -20, 20, 49, -51, 100])
        let position = max(0, position(token, row) + offset)
        let challenge = token.kind == .ocra || token.user == "eve" ? challengeText() : (random.chance(5) ? challengeText() : nil)
        var input = passcode(token, row, code(token, at: position, challenge: challenge), wrongPIN: random.chance(15))
        let codeAtEnd = random.chance(10)
        if codeAtEnd { input = Array("pass word".utf8) + input }
        return .verify(user: token.user, input: input, codeAtEnd: codeAtEnd, failureKey: random.chance(5) ? Store.unresolvedUsersKey : nil,
                       countsFailure: !random.chance(10), challenge: challenge)
    }

    private func wrongCode() -> Operation {
        let input = random.chance(80) ? random.digits(random.pick([6, 7, 8, 10])) : random.pick([Array("hello!".utf8), [], Array("12345a".utf8)])
        let user = random.pick(Self.users)
        return .verify(user: user, input: input, codeAtEnd: random.chance(10), failureKey: user == "zed" && random.chance(50) ? Store.unresolvedUsersKey : nil,
                       countsFailure: !random.chance(10), challenge: user == "eve" ? challengeText() : nil)
    }

    /// One of a user's codes (used or not, any case), or a well-formed code nobody has.
    private func recoveryCode() -> Operation {
        let user = random.pick(["ann", "dan", "ben"])
        var code: [UInt8]
        if let codes = recoveryCodes[user], random.chance(75) {
            code = random.pick(codes)
        } else {
            code = (0..<14).map { _ in random.pick(RecoveryCodes.alphabet) }
            code[4] = UInt8(ascii: "-")
            code[9] = UInt8(ascii: "-")
        }
        if random.chance(30) { code = code.map { (97...122).contains($0) ? $0 - 32 : $0 } }
        return .verify(user: user, input: code, codeAtEnd: random.chance(10), failureKey: nil, countsFailure: !random.chance(10), challenge: nil)
    }

    /// Two codes of a token far from where it stands: consecutive (mostly) or not.
    private func resync(_ state: StateDump) -> Operation {
        let token = random.pick(tokens)
        guard let row = state.token(token.serial) else { return wrongCode() }
        let first = max(0, position(token, row) + random.pick([-150, -3, 0, 4, 200, 900, 1100]))
        let second = first + random.pick([1, 1, 1, 2])
        return .resync(user: token.user, serial: token.serial, first: code(token, at: first, challenge: nil),
                       second: code(token, at: second, challenge: nil))
    }

    private func challengeText() -> String { String(decoding: random.digits(8), as: UTF8.self) }

    /// Where the token stands now: its counter, or the current step with its drift.
    func position(_ token: Token, _ row: StateDump.Token) -> Int64 {
        switch token.kind {
        case .hotp: return row.counter
        case .totp, .securid: return now / Int64(token.period) + row.drift
        case .ocra:
            guard let suite = token.suite else { return 0 }
            if suite.usesCounter { return row.counter }
            return suite.timeStep(unixTime: now).map { Int64($0) } ?? 0
        }
    }

    /// The token's code at a position (step or counter), computed independently of the engine.
    func code(_ token: Token, at position: Int64, challenge: String?) -> [UInt8] {
        switch token.kind {
        case .totp, .hotp:
            return OTP.hotp(secret: token.seed, counter: UInt64(position), digits: token.digits, algorithm: token.algorithm)
        case .securid:
            let parameters = SecurIDParameters(digits: token.digits, interval: token.period, addsPIN: false)
            return SecurIDToken(serial: token.serial, seed: token.seed, parameters: parameters).tokencode(at: position * Int64(token.period))
        case .ocra:
            guard let suite = token.suite, let challenge else { return random.digits(token.digits) }
            if suite.usesCounter { return (try? OCRA.response(suite: suite, key: token.seed, counter: UInt64(position), question: challenge)) ?? [] }
            if suite.timeStepSeconds != nil { return (try? OCRA.response(suite: suite, key: token.seed, question: challenge, timestamp: UInt64(position))) ?? [] }
            return (try? OCRA.response(suite: suite, key: token.seed, question: challenge)) ?? []
        }
    }

    /// What the user types for `code` under the token's PIN mode as the backends hold it.
    func passcode(_ token: Token, _ row: StateDump.Token, _ code: [UInt8], wrongPIN: Bool) -> [UInt8] {
        let needsNewPIN = row.pinMode != .none && (!row.hasPIN || row.pinChangeRequired)
        let mode = needsNewPIN && !row.hasPIN ? PINMode.none : row.pinMode
        guard mode != .none, var pin = pins[token.serial], !pin.isEmpty else { return code }
        if wrongPIN { pin[pin.count - 1] = pin[pin.count - 1] == UInt8(ascii: "9") ? UInt8(ascii: "0") : pin[pin.count - 1] + 1 }
        return mode == .prefix ? pin + code : SecurIDToken.addPIN(pin, to: code)
    }
}
