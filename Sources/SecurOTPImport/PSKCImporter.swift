import Foundation
import SecurOTPCore

/// PSKC (RFC 6030) key containers: HOTP and TOTP keys, plaintext, encrypted with a pre-shared
/// transport key (AES-CBC + HMAC, or AES key wrap) or with a key derived from a password
/// (PBKDF2). Pre-RFC drafts (`Device` for `KeyPackage`, `KeyAlgorithm`/`KeyId`, `Usage`) are
/// read where they differ only in names. All or nothing: one bad key fails the file.
enum PSKCImporter {
    static let source = "pskc"

    static func decode(_ bytes: [UInt8], options: ImportOptions) throws(ImportError) -> [ImportedToken] {
        let root = try PSKCXML.parse(bytes)
        guard root.name == "KeyContainer" else {
            throw ImportError(.unrecognized, "XML root element <\(root.name)> is not a PSKC <KeyContainer>")
        }
        if let version = root.attribute("Version"), version != "1.0" {
            throw ImportError(.unsupported, "PSKC KeyContainer Version \"\(version)\" is not supported (1.0 is)")
        }
        let keyring = try PSKCKeyring(container: root, options: options)
        let packages = root.children.filter { $0.name == "KeyPackage" || $0.name == "Device" }
        guard !packages.isEmpty else { throw ImportError(.malformed, "PSKC file holds no KeyPackage") }

        var tokens = [ImportedToken]()
        for (packageIndex, package) in packages.enumerated() {
            for key in package.children("Key") {
                let id = key.attribute("Id") ?? key.attribute("KeyId")
                let label = "PSKC key" + (id.map { " \"\($0)\"" } ?? "") + " (KeyPackage \(packageIndex + 1), line \(key.line))"
                do throws(ImportError) {
                    if let token = try importKey(key, package: package, keyring: keyring, options: options) {
                        tokens.append(token)
                    }
                } catch {
                    throw ImportError(error.code, "\(label): \(error.message)")
                }
            }
        }
        guard !tokens.isEmpty else { throw ImportError(.malformed, "PSKC file holds no HOTP or TOTP key") }
        return tokens
    }

    private enum Algorithm { case hotp, totp, pin }

    private static func algorithm(_ uri: String) throws(ImportError) -> Algorithm {
        let folded = uri.trimmingCharacters(in: .whitespaces).lowercased()
        let prefixes = ["urn:ietf:params:xml:ns:keyprov:pskc:", "urn:ietf:params:xml:ns:keyprov:pskc#",
                        "http://www.ietf.org/keyprov/pskc#"]
        for prefix in prefixes where folded.hasPrefix(prefix) {
            switch folded.dropFirst(prefix.count) {
            case "hotp": return .hotp
            case "totp": return .totp
            case "pin": return .pin
            default: break
            }
        }
        if folded.contains("securid") {
            throw ImportError(.unsupported, "SecurID keys in PSKC (\(uri)) are not supported; import the .sdtid file or CTF string instead")
        }
        if folded.contains("ocra") {
            throw ImportError(.unsupported, "OCRA challenge-response keys (\(uri)) are not supported")
        }
        throw ImportError(.unsupported, "key algorithm \(uri) is not supported (securotp imports HOTP and TOTP)")
    }

    /// Nil for keys that are not tokens (PIN keys that a PINPolicy refers to).
    private static func importKey(_ key: PSKCNode, package: PSKCNode, keyring: PSKCKeyring,
                                  options: ImportOptions) throws(ImportError) -> ImportedToken? {
        guard let uri = key.attribute("Algorithm") ?? key.attribute("KeyAlgorithm"), !uri.isEmpty else {
            throw ImportError(.malformed, "no Algorithm")
        }
        let kind: OATHKind
        switch try algorithm(uri) {
        case .pin: return nil
        case .hotp: kind = .hotp
        case .totp: kind = .totp
        }

        var parameters = OATHParameters(kind: kind)
        let algorithmParameters = key.child("AlgorithmParameters") ?? key.child("Usage")
        if let suite = algorithmParameters?.child("Suite")?.text, !suite.isEmpty {
            var name = suite.uppercased()
            if name.hasPrefix("HMAC-") { name.removeFirst(5) }
            guard let hash = HashAlgorithm(name: name) else {
                throw ImportError(.unsupported, "Suite \"\(suite)\" is not supported (HMAC-SHA1, HMAC-SHA256 or HMAC-SHA512)")
            }
            parameters.algorithm = hash
        }
        guard let response = algorithmParameters?.child("ResponseFormat") else {
            if let profile = key.child("KeyProfileId")?.text, !profile.isEmpty {
                throw ImportError(.unsupported, "its parameters come from key profile \"\(profile)\", which is not in the file")
            }
            throw ImportError(.malformed, "no ResponseFormat (the number of digits)")
        }
        let encoding = (response.attribute("Encoding") ?? response.attribute("Format") ?? "DECIMAL").uppercased()
        guard encoding == "DECIMAL" else {
            throw ImportError(.unsupported, "ResponseFormat Encoding \(encoding) is not supported (DECIMAL is)")
        }
        if let checkDigits = response.attribute("CheckDigits"), checkDigits == "true" || checkDigits == "1" {
            throw ImportError(.unsupported, "responses with a Luhn check digit are not supported")
        }
        guard let lengthText = response.attribute("Length"), let digits = Int(lengthText) else {
            throw ImportError(.malformed, "ResponseFormat has no Length")
        }
        guard OTP.digitRange.contains(digits) else {
            throw ImportError(.unsupported, "\(digits)-digit responses are not supported (6, 7 or 8)")
        }
        parameters.digits = digits

        let data = key.child("Data")
        guard let secretNode = data?.child("Secret") else { throw ImportError(.malformed, "no Data/Secret") }
        let secret = try value(secretNode, keyring: keyring, what: "Secret")
        guard secret.count > 0 else { throw ImportError(.malformed, "the secret is empty") }
        guard secret.count <= 256 else { throw ImportError(.malformed, "the secret is \(secret.count) bytes; at most 256 are accepted") }

        switch kind {
        case .hotp:
            if let counter = try integer(data?.child("Counter"), keyring: keyring, what: "Counter") {
                guard counter >= 0 else { throw ImportError(.malformed, "Counter is negative") }
                parameters.counter = UInt64(counter)
            }
        case .totp:
            if let interval = try integer(data?.child("TimeInterval"), keyring: keyring, what: "TimeInterval") {
                guard OTP.periodRange.contains(Int(clamping: interval)) else {
                    throw ImportError(.unsupported, "TimeInterval \(interval) s is not supported (1–300 s)")
                }
                parameters.period = Int(interval)
            }
            if let time = try integer(data?.child("Time"), keyring: keyring, what: "Time"), time != 0 {
                throw ImportError(.unsupported, "Time \(time) (a TOTP start other than the Unix epoch) is not supported")
            }
            // TimeDrift (steps the server saw the token drift) is left to the verifier's window.
        }

        let policy = key.child("Policy")
        if let usages = policy?.children("KeyUsage").map(\.text), !usages.isEmpty, !usages.contains("OTP") {
            throw ImportError(.unsupported, "its Policy KeyUsage (\(usages.joined(separator: ", "))) does not allow OTP")
        }
        var pinMode = PINMode.none
        switch policy?.child("PINPolicy")?.attribute("PINUsageMode") {
        case "Prepend": pinMode = .prefix
        case "Algorithmic": pinMode = .addedByToken
        default: break
        }

        let device = package.child("DeviceInfo") ?? package.child("DeviceId")
        var expires: Int64?
        for node in [device?.child("ExpiryDate"), policy?.child("ExpiryDate")] {
            guard let text = node?.text, !text.isEmpty else { continue }
            guard let time = PSKCDateTime.unixTime(text) else { throw ImportError(.malformed, "ExpiryDate \"\(text)\" is not an xs:dateTime") }
            expires = min(expires ?? time, time)
        }
        if let expires, options.now > expires {
            throw ImportError(.expired, "the key expired on \(PSKCDateTime.format(expires))")
        }

        func nonEmpty(_ node: PSKCNode?) -> String? {
            guard let text = node?.text, !text.isEmpty else { return nil }
            return text
        }
        let account = nonEmpty(key.child("UserId")) ?? nonEmpty(device?.child("UserId")) ?? nonEmpty(key.child("FriendlyName"))
        return ImportedToken(kind: .oath(parameters), secret: secret, serial: nonEmpty(device?.child("SerialNo")),
                             issuer: nonEmpty(key.child("Issuer")), account: account, pinMode: pinMode,
                             expires: expires, source: source)
    }

    /// A Data child's bytes: `PlainValue` (base64 for Secret) or `EncryptedValue` + `ValueMAC`.
    private static func value(_ node: PSKCNode, keyring: PSKCKeyring, what: String) throws(ImportError) -> SecretBytes {
        if let encrypted = node.child("EncryptedValue") {
            return try keyring.decrypt(encrypted, valueMAC: node.child("ValueMAC"), what: what)
        }
        guard let plain = node.child("PlainValue") else { throw ImportError(.malformed, "\(what) has neither PlainValue nor EncryptedValue") }
        guard let bytes = TokenImporter.Base64.decodeSecret(Array(plain.text.utf8)) else {
            throw ImportError(.malformed, "\(what) PlainValue is not valid base64")
        }
        return bytes
    }

    /// An integer Data child: decimal text in `PlainValue`, or, encrypted, big-endian bytes
    /// (RFC 6030 §4.3.1) or ASCII digits (as some producers write).
    private static func integer(_ node: PSKCNode?, keyring: PSKCKeyring, what: String) throws(ImportError) -> Int64? {
        guard let node else { return nil }
        if let plain = node.child("PlainValue") {
            guard let number = Int64(plain.text) else { throw ImportError(.malformed, "\(what) \"\(plain.text)\" is not an integer") }
            return number
        }
        guard let encrypted = node.child("EncryptedValue") else {
            throw ImportError(.malformed, "\(what) has neither PlainValue nor EncryptedValue")
        }
        let bytes = try keyring.decrypt(encrypted, valueMAC: node.child("ValueMAC"), what: what)
        return try bytes.withUnsafeBytes { buffer throws(ImportError) -> Int64 in
            let digits = buffer.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            if digits, !buffer.isEmpty, let number = Int64(String(decoding: buffer, as: UTF8.self)) { return number }
            guard !buffer.isEmpty, buffer.count <= 8 else { throw ImportError(.malformed, "encrypted \(what) is \(buffer.count) bytes") }
            var number: UInt64 = 0
            for byte in buffer { number = number << 8 | UInt64(byte) }
            guard number <= UInt64(Int64.max) else { throw ImportError(.malformed, "encrypted \(what) is out of range") }
            return Int64(number)
        }
    }
}

/// xs:dateTime as PSKC writes it: `2035-12-31T00:00:00Z`, optional fractional seconds,
/// `Z`, `±hh:mm` or no zone (taken as UTC). A bare date means its midnight UTC.
enum PSKCDateTime {
    static func unixTime(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ width: Int) -> Int? {
            guard index + width <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + width)] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += width
            return value
        }
        func literal(_ character: Character) -> Bool {
            guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
            index += 1
            return true
        }
        guard let year = number(4), year >= 1, literal("-"), let month = number(2), literal("-"), let day = number(2),
              (1...12).contains(month), (1...daysInMonth(year, month)).contains(day)
        else { return nil }
        var seconds = 0
        if literal("T") {
            guard let hour = number(2), literal(":"), let minute = number(2), literal(":"), let second = number(2),
                  hour < 24 || (hour == 24 && minute == 0 && second == 0), minute < 60, second < 60
            else { return nil }
            seconds = hour * 3600 + minute * 60 + second
            if literal(".") {
                let start = index
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
                guard index > start else { return nil }
            }
        }
        var offset = 0
        if literal("Z") {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = number(2), literal(":"), let minutes = number(2), hours <= 14, minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        guard index == bytes.count else { return nil }
        return Int64(daysSinceEpoch(year, month, day)) * 86_400 + Int64(seconds - offset)
    }

    static func format(_ time: Int64) -> String {
        var days = time >= 0 ? time / 86_400 : (time - 86_399) / 86_400
        let seconds = time - days * 86_400
        // Walk from the epoch a year, then a month, at a time; expiry dates are near.
        var year = 1970
        while days < 0 { year -= 1; days += Int64(daysInYear(year)) }
        while days >= Int64(daysInYear(year)) { days -= Int64(daysInYear(year)); year += 1 }
        var month = 1
        while days >= Int64(daysInMonth(year, month)) { days -= Int64(daysInMonth(year, month)); month += 1 }
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(Int64(month)))-\(two(days + 1)) \(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)) UTC"
    }

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }
    private static func daysInYear(_ year: Int) -> Int { isLeap(year) ? 366 : 365 }
    private static func daysInMonth(_ year: Int, _ month: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date.
    private static func daysSinceEpoch(_ year: Int, _ month: Int, _ day: Int) -> Int {
        // Count whole years since 1 Jan 0001 via leap-year arithmetic, then months, then days.
        func daysBeforeYear(_ y: Int) -> Int {
            let previous = y - 1
            return previous * 365 + previous / 4 - previous / 100 + previous / 400
        }
        var days = daysBeforeYear(year) - daysBeforeYear(1970)
        for m in 1..<month { days += daysInMonth(year, m) }
        return days + day - 1
    }
}
