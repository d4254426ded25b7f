import SecurOTPCore
import SecurOTPStore

/// `POST /v1/preflight`'s answer (docs/api/openapi.yaml, PreflightResponse).
struct PreflightAnswer {
    /// An OCRA challenge the validator issued for this login: shown in the prompt, its id sent
    /// back with the passcode.
    struct OCRAChallenge {
        let id: String
        let challenge: String
        let digits: Int
    }

    let hasTokens: Bool
    /// The user has an active device and pushes are not blocked (docs/push.md): the module
    /// may offer an approval on the device.
    let push: Bool
    let ocraChallenge: OCRAChallenge?
    /// Digits of the user's tokens (OCRA excepted), for forward_pass.
    let codeDigits: [Int]
    /// The user has an active FIDO credential on the validator (docs/fido.md, "Remote mode").
    let fido: Bool
    /// The user's methods as the validator's policy sets them; nil: none set there (the
    /// standard order). An empty list (policies with no method in common) is `noMethods`.
    let methods: LoginMethods?
    let noMethods: Bool
    /// The user holds a second factor on the validator, usable now or not (`holds_factor`:
    /// a blocked device or a cloned key too). `nullok` asks only this. Never less than what
    /// `has_tokens`, `push` and `fido` say, so a validator that does not send the field (older
    /// versions) keeps the rule of those.
    let holdsFactor: Bool

    init?(_ json: JSONValue) {
        guard let hasTokens = json["has_tokens"]?.bool, let digits = json["code_digits"]?.array else { return nil }
        var codeDigits: [Int] = []
        for item in digits {
            guard let value = item.integer, (1...10).contains(value) else { return nil }
            codeDigits.append(Int(value))
        }
        if let offer = json["ocra_challenge"], offer != .null {
            // The challenge goes into the prompt: 4–64 letters and digits, nothing else.
            guard let id = offer["id"]?.string, ValidatorText.isChallengeID(id),
                  let challenge = offer["challenge"]?.string, (4...64).contains(challenge.utf8.count),
                  challenge.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) }),
                  let digits = offer["digits"]?.integer, (4...10).contains(digits) else { return nil }
            ocraChallenge = OCRAChallenge(id: id, challenge: challenge, digits: Int(digits))
        } else {
            ocraChallenge = nil
        }
        self.hasTokens = hasTokens
        self.codeDigits = codeDigits
        // A validator without push support sends no `push`: no approval is offered.
        switch json["push"] {
        case nil, .null?: push = false
        case .bool(let value)?: push = value
        default: return nil
        }
        switch json["fido"] {
        case nil, .null?: fido = false
        case .bool(let value)?: fido = value
        default: return nil
        }
        let holds: Bool
        switch json["holds_factor"] {
        case nil, .null?: holds = false
        case .bool(let value)?: holds = value
        default: return nil
        }
        holdsFactor = holds || hasTokens || push || fido
        switch json["methods"] {
        case nil, .null?:
            methods = nil
            noMethods = false
        case .array(let items)?:
            var names: [String] = []
            for item in items {
                guard let name = item.string, LoginMethod(rawValue: name) != nil, !names.contains(name) else { return nil }
                names.append(name)
            }
            if names.isEmpty {
                methods = nil
                noMethods = true
            } else {
                guard let parsed = LoginMethods(parsing: names.joined(separator: ",")) else { return nil }
                methods = parsed
                noMethods = false
            }
        default: return nil
        }
    }
}

/// `POST /v1/push`'s answer: the request the validator holds for this login (docs/push.md).
struct OpenedPush {
    /// `pr` and 32 lowercase hex digits.
    let id: String
    /// Unix seconds.
    let expires: Int64
    /// This host's name on the validator, as the device signs it.
    let host: String
    /// A device of the user has offline mode (docs/push.md, "Offline approval").
    let offline: Bool

    init?(_ json: JSONValue) {
        offline = json["offline"]?.bool == true
        guard let id = json["id"]?.string, PushIdentifiers.isRequestID(id),
              let expires = json["expires"]?.integer, expires > 0, expires < 100_000_000_000,
              let host = json["host"]?.string, PushIdentifiers.isHostName(host) else { return nil }
        self.id = id
        self.expires = expires
        self.host = host
    }
}

/// `POST /v1/push/wait`'s answer: the request's state, and the device's approval once.
struct PushWaitAnswer {
    enum State: String {
        case pending, approved, denied, expired, failed, cancelled, consumed
    }

    let state: State
    let approval: DeviceApproval?
    /// `pending`: wrong numbers typed on the device so far (0: none, or a validator that does
    /// not say).
    let wrongNumbers: Int
    /// `failed` because of wrong numbers typed on the device (`reason: "wrong_number"`); any
    /// other failure, or a validator that gives no reason, is a refused approval.
    let failedByWrongNumbers: Bool

    /// `id`: the request asked about; an answer about another one is unreadable.
    init?(_ json: JSONValue, id: String) {
        guard json["id"]?.string == id, let text = json["state"]?.string, let state = State(rawValue: text) else { return nil }
        self.state = state
        switch json["wrong_numbers"] {
        case nil, .null?: wrongNumbers = 0
        case let value?:
            guard let count = value.integer, (0...1000).contains(count) else { return nil }
            wrongNumbers = Int(count)
        }
        failedByWrongNumbers = state == .failed && json["reason"]?.string == "wrong_number"
        if let value = json["approval"], value != .null {
            guard let approval = DeviceApproval(value) else { return nil }
            self.approval = approval
        } else {
            approval = nil
        }
        // An approval comes with `approved`, or with `consumed` as the request moves on when it
        // is handed out (docs/push.md: either reading); `approved` never comes without one.
        if approval != nil, state != .approved, state != .consumed { return nil }
        if approval == nil, state == .approved { return nil }
    }
}

/// A device's signed answer as the validator relays it; every binary field decoded and
/// bounded here, checked by PushApprovalCheck.
struct DeviceApproval {
    /// `dv` and 16 lowercase hex digits.
    let device: String
    /// FIDO UAF authenticator id, `VVVV#MMMM`.
    let aaid: String
    let publicKey: [UInt8]
    /// Standard base64 of the CA's DER signature, as DeviceCertificate reads it.
    let certificate: String?
    let authenticatorData: [UInt8]
    let clientDataJSON: [UInt8]
    let signature: [UInt8]
    /// `FFFF#0002`: the origin the phone's passkey signed at.
    let origin: String?

    init?(_ json: JSONValue) {
        guard let device = json["device"]?.string, PushIdentifiers.isDeviceID(device),
              let aaid = json["aaid"]?.string, PushIdentifiers.isAAID(aaid),
              let publicKey = Self.binary(json, "public_key", max: 256),
              let authenticatorData = Self.binary(json, "authenticator_data", max: 256),
              let clientDataJSON = Self.binary(json, "client_data_json", max: 4096),
              let signature = Self.binary(json, "signature", max: 256),
              let certificate = ValidatorText.optionalString(json, "certificate"),
              certificate.map({ (1...512).contains($0.utf8.count) }) ?? true,
              let origin = ValidatorText.optionalString(json, "origin"), origin.map({ (1...255).contains($0.utf8.count) }) ?? true
        else { return nil }
        self.origin = origin
        self.device = device
        self.aaid = aaid
        self.publicKey = publicKey
        self.certificate = certificate
        self.authenticatorData = authenticatorData
        self.clientDataJSON = clientDataJSON
        self.signature = signature
    }

    private static func binary(_ json: JSONValue, _ key: String, max: Int) -> [UInt8]? {
        guard let text = json[key]?.string, text.utf8.count <= max * 4 / 3 + 4, let bytes = Base64.decode(text, .url),
              !bytes.isEmpty, bytes.count <= max else { return nil }
        return bytes
    }
}

/// The shapes of push identifiers (docs/push.md, "Words"): checked before they reach a log
/// line or go back to the validator.
enum PushIdentifiers {
    static func isRequestID(_ text: String) -> Bool { isPrefixedHex(text, "pr", digits: 32) }
    static func isDeviceID(_ text: String) -> Bool { isPrefixedHex(text, "dv", digits: 16) }

    /// `VVVV#MMMM`, upper-case hex.
    static func isAAID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 9, bytes[4] == UInt8(ascii: "#") else { return false }
        for (index, byte) in bytes.enumerated() where index != 4 {
            guard (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) else { return false }
        }
        return true
    }

    /// A credential's name as the validator accepts it (AccessRules.checked): 1–64 ASCII
    /// letters, digits, '.', '-', '_', '@'.
    static func isHostName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "@")
        }
    }

    private static func isPrefixedHex(_ text: String, _ prefix: String, digits: Int) -> Bool {
        let bytes = Array(text.utf8)
        let head = Array(prefix.utf8)
        guard bytes.count == head.count + digits, Array(bytes[..<head.count]) == head else { return false }
        return bytes[head.count...].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

/// `/v1/verify` and `/v1/verify/answer`'s answer (VerifyResponse). What the user will read
/// (prompts, info, error) must be plain text; what goes to the log is cleaned.
struct VerifyAnswer {
    enum Result {
        case accept, reject, locked, challenge
    }

    let result: Result
    /// `outcome`, where it says more than `result`: a recovery code accepted, a replay refused.
    /// A validator of an earlier version sends none; its answers then read as plain accept or reject.
    let isRecoveryCode: Bool
    let isReplay: Bool
    let serial: String?
    let codeDigits: Int?
    let challenge: Challenge?
    let reason: String
    let failures: Int
    let lockedNow: Bool
    let info: String?
    let error: String?
    /// accept: fresh offline codes for this host's cache (empty when none came).
    let offline: [OfflineCache.Refill]
    /// The answer carried an `offline` list this host could not read (it is ignored).
    let offlineUnreadable: Bool

    struct Challenge {
        enum Kind { case nextCode, newPIN, passcode }

        let id: String
        let kind: Kind
        let prompt: String
        let confirmPrompt: String?

        init?(_ json: JSONValue) {
            guard let id = json["id"]?.string, ValidatorText.isChallengeID(id),
                  let kindName = json["kind"]?.string, let prompt = json["prompt"]?.string, ValidatorText.isDisplayable(prompt),
                  let confirm = ValidatorText.optionalString(json, "confirm_prompt"), confirm.map(ValidatorText.isDisplayable) ?? true
            else { return nil }
            switch kindName {
            case "next_code": kind = .nextCode
            case "new_pin":
                guard confirm != nil else { return nil }
                kind = .newPIN
            case "passcode": kind = .passcode
            default: return nil
            }
            self.id = id
            self.prompt = prompt
            confirmPrompt = confirm
        }
    }

    init?(_ json: JSONValue) {
        switch json["result"]?.string {
        case "accept": result = .accept
        case "reject": result = .reject
        case "locked": result = .locked
        case "challenge": result = .challenge
        default: return nil
        }
        let outcome = json["outcome"]?.string
        isRecoveryCode = result == .accept && outcome == "recovery_code"
        isReplay = result == .reject && outcome == "replayed"
        guard let serial = ValidatorText.optionalString(json, "serial"), let reason = ValidatorText.optionalString(json, "reason"),
              let info = ValidatorText.optionalString(json, "info"), info.map(ValidatorText.isDisplayable) ?? true,
              let error = ValidatorText.optionalString(json, "error"), error.map(ValidatorText.isDisplayable) ?? true
        else { return nil }
        var challenge: Challenge?
        if let value = json["challenge"], value != .null {
            guard let parsed = Challenge(value) else { return nil }
            challenge = parsed
        }
        if result == .challenge, challenge == nil { return nil }
        let digits = json["code_digits"]?.integer
        let failures = json["failures"]?.integer ?? 0
        guard digits.map({ (1...10).contains($0) }) ?? true, (0...1_000_000).contains(failures) else { return nil }
        self.serial = serial.map(ValidatorText.loggable)
        self.reason = reason.map(ValidatorText.loggable) ?? ""
        self.info = info
        self.error = error
        self.challenge = challenge
        codeDigits = digits.map { Int($0) }
        self.failures = Int(failures)
        lockedNow = json["locked_now"]?.bool ?? false
        if let list = json["offline"], list != .null {
            let refills = Self.refills(list)
            offline = refills ?? []
            offlineUnreadable = refills == nil
        } else {
            offline = []
            offlineUnreadable = false
        }
    }

    /// `offline`: per token, the first counter still reserved for this host and new hashes.
    private static func refills(_ list: JSONValue) -> [OfflineCache.Refill]? {
        guard let items = list.array, items.count <= 10 else { return nil }
        var refills: [OfflineCache.Refill] = []
        for item in items {
            guard let serial = item["serial"]?.string, OfflineCache.isPlainSerial(serial), let digits = item["digits"]?.integer, let iterations = item["iterations"]?.integer,
                  let firstValid = item["first_valid"]?.integer, firstValid >= 0,
                  let codes = item["codes"]?.array, codes.count <= 100 else { return nil }
            var parsed: [OfflineCache.Code] = []
            for code in codes {
                guard let counter = code["counter"]?.integer, let salt = code["salt"]?.string, let hash = code["hash"]?.string,
                      let saltBytes = Hex.decode(salt), let hashBytes = Hex.decode(hash),
                      let entry = OfflineCache.Code(serial: serial, digits: Int(clamping: digits), iterations: Int(clamping: iterations),
                                                    counter: counter, salt: saltBytes, hash: hashBytes) else { return nil }
                parsed.append(entry)
            }
            refills.append(OfflineCache.Refill(serial: serial, firstValid: firstValid, codes: parsed))
        }
        return refills
    }
}

/// Checks and clean-up for text from a validator.
enum ValidatorText {
    /// A member that may be missing or null; nil (outer) when present but not a string.
    static func optionalString(_ json: JSONValue, _ key: String) -> String?? {
        guard let value = json[key], value != .null else { return .some(nil) }
        guard let text = value.string else { return nil }
        return .some(text)
    }

    /// Shown on the user's terminal: bounded, and safe by the project's one rule for text from
    /// outside (TerminalText.isSafe): no C0/C1 control (no escape sequence), no line separator,
    /// no bidi control that would reorder what the user reads.
    static func isDisplayable(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 512 && TerminalText.isSafe(text)
    }

    /// Challenge ids go back to the validator as they came: short, plain.
    static func isChallengeID(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d || byte == 0x5f
        }
    }

    /// For a syslog line: control characters become '?', at most 200 characters.
    static func loggable(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(200) {
            out.append(scalar.value < 0x20 || scalar.value == 0x7f ? "?" : scalar)
        }
        return String(out)
    }
}
