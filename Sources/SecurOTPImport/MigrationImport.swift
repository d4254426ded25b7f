import SecurOTPCore

/// Google Authenticator's "Transfer accounts" export: `otpauth-migration://offline?data=…`
/// where `data` is the (percent-encoded) base64 of a protobuf `MigrationPayload`:
///
///     MigrationPayload { repeated OtpParameters otp_parameters = 1; int32 version = 2;
///                        int32 batch_size = 3; int32 batch_index = 4; int32 batch_id = 5; }
///     OtpParameters    { bytes secret = 1; string name = 2; string issuer = 3;
///                        Algorithm algorithm = 4; DigitCount digits = 5; OtpType type = 6;
///                        int64 counter = 7; }
///
/// Enum values: Algorithm 0 unspecified, 1 SHA1, 2 SHA256, 3 SHA512, 4 MD5; DigitCount
/// 0 unspecified, 1 six, 2 eight; OtpType 0 unspecified, 1 HOTP, 2 TOTP. Unspecified means
/// SHA1 / 6 digits / TOTP. There is no period: Google Authenticator only exports 30 s tokens.
enum MigrationImport {
    static let source = "otpauth-migration"

    /// One decoded `OtpParameters` before it is checked and mapped.
    struct Entry {
        var secret: SecretBytes?
        var name = ""
        var issuer = ""
        var algorithm: UInt64 = 0
        var digits: UInt64 = 0
        var type: UInt64 = 0
        var counter: UInt64 = 0
    }

    struct Payload {
        var entries: [Entry] = []
        var version: UInt64 = 0
        var batchSize: UInt64 = 0
        var batchIndex: UInt64 = 0
        var batchID: UInt64 = 0
    }

    static func tokens(fromURI text: String) throws(ImportError) -> [ImportedToken] {
        var payloadBytes = try payloadBytes(fromURI: text)
        defer { wipe(&payloadBytes) }
        let payload = try decodePayload(payloadBytes)
        guard !payload.entries.isEmpty else {
            throw ImportError(.malformed, "otpauth-migration payload holds no accounts")
        }
        var tokens = [ImportedToken]()
        for (index, entry) in payload.entries.enumerated() {
            do throws(ImportError) {
                tokens.append(try token(from: entry))
            } catch {
                let label = entry.name.isEmpty ? "" : " (\(entry.name))"
                throw ImportError(error.code, "otpauth-migration account \(index + 1)\(label): \(error.message)")
            }
        }
        return tokens
    }

    /// The base64-decoded `data=` parameter.
    static func payloadBytes(fromURI text: String) throws(ImportError) -> [UInt8] {
        let bytes = Array(text.utf8)
        let scheme = "otpauth-migration://"
        guard TokenImporter.startsWithCaseInsensitive(bytes, scheme) else {
            throw ImportError(.malformed, "not an otpauth-migration:// URI")
        }
        let rest = Array(bytes.dropFirst(scheme.utf8.count))
        let question = rest.firstIndex(of: UInt8(ascii: "?")) ?? rest.endIndex
        let host = String(decoding: rest[..<question].map(TokenImporter.foldASCII), as: UTF8.self)
        guard host == "offline" || host == "offline/" else {
            throw ImportError(.malformed, "otpauth-migration URI must be otpauth-migration://offline?data=… (got host \"\(host)\")")
        }
        guard question < rest.endIndex else { throw ImportError(.malformed, "otpauth-migration URI has no data= parameter") }
        var data: [UInt8]?
        for pair in rest[(question + 1)...].split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard String(decoding: parts[0].map(TokenImporter.foldASCII), as: UTF8.self) == "data" else { continue }
            guard data == nil else { throw ImportError(.malformed, "otpauth-migration URI has more than one data= parameter") }
            guard parts.count == 2, let decoded = percentDecode(parts[1]) else {
                throw ImportError(.malformed, "otpauth-migration data= is not valid percent-encoding")
            }
            data = decoded
        }
        guard var data else { throw ImportError(.malformed, "otpauth-migration URI has no data= parameter") }
        defer { wipe(&data) }
        // A '+' that went through form decoding comes back as a space.
        for index in data.indices where data[index] == UInt8(ascii: " ") { data[index] = UInt8(ascii: "+") }
        guard !data.isEmpty, let payload = TokenImporter.Base64.decode(data, urlSafe: true) else {
            throw ImportError(.malformed, "otpauth-migration data= is not valid base64")
        }
        return payload
    }

    static func decodePayload(_ bytes: [UInt8]) throws(ImportError) -> Payload {
        try bytes.withUnsafeBufferPointer { buffer throws(ImportError) -> Payload in
            var reader = MigrationWireReader(buffer)
            var payload = Payload()
            while !reader.isAtEnd {
                let field = try reader.readField()
                switch field.number {
                case 1:
                    try reader.expect(field, .lengthDelimited, name: "otp_parameters")
                    let span = try reader.readLengthDelimited()
                    do throws(ImportError) {
                        payload.entries.append(try decodeEntry(MigrationWireReader(buffer, span: span)))
                    } catch {
                        throw ImportError(error.code, "otpauth-migration account \(payload.entries.count + 1): \(error.message)")
                    }
                case 2: try reader.expect(field, .varint, name: "version"); payload.version = try reader.readVarint()
                case 3: try reader.expect(field, .varint, name: "batch_size"); payload.batchSize = try reader.readVarint()
                case 4: try reader.expect(field, .varint, name: "batch_index"); payload.batchIndex = try reader.readVarint()
                case 5: try reader.expect(field, .varint, name: "batch_id"); payload.batchID = try reader.readVarint()
                default: try reader.skip(field)
                }
            }
            return payload
        }
    }

    private static func decodeEntry(_ start: MigrationWireReader) throws(ImportError) -> Entry {
        var reader = start
        var entry = Entry()
        while !reader.isAtEnd {
            let field = try reader.readField()
            switch field.number {
            case 1:
                try reader.expect(field, .lengthDelimited, name: "secret")
                entry.secret = SecretBytes(copying: reader.slice(try reader.readLengthDelimited()))
            case 2:
                try reader.expect(field, .lengthDelimited, name: "name")
                entry.name = try reader.string(try reader.readLengthDelimited(), name: "name")
            case 3:
                try reader.expect(field, .lengthDelimited, name: "issuer")
                entry.issuer = try reader.string(try reader.readLengthDelimited(), name: "issuer")
            case 4: try reader.expect(field, .varint, name: "algorithm"); entry.algorithm = try reader.readVarint()
            case 5: try reader.expect(field, .varint, name: "digits"); entry.digits = try reader.readVarint()
            case 6: try reader.expect(field, .varint, name: "type"); entry.type = try reader.readVarint()
            case 7: try reader.expect(field, .varint, name: "counter"); entry.counter = try reader.readVarint()
            default: try reader.skip(field)
            }
        }
        return entry
    }

    /// Checks one entry and maps its enums.
    static func token(from entry: Entry) throws(ImportError) -> ImportedToken {
        guard let secret = entry.secret, secret.count > 0 else { throw ImportError(.malformed, "no secret") }
        let algorithm: HashAlgorithm
        switch entry.algorithm {
        case 0, 1: algorithm = .sha1
        case 2: algorithm = .sha256
        case 3: algorithm = .sha512
        case 4: throw ImportError(.unsupported, "algorithm MD5 is not supported (HOTP/TOTP use SHA1, SHA256 or SHA512)")
        default: throw ImportError(.unsupported, "unknown algorithm value \(entry.algorithm)")
        }
        let digits: Int
        switch entry.digits {
        case 0, 1: digits = 6
        case 2: digits = 8
        default: throw ImportError(.unsupported, "unknown digit count value \(entry.digits)")
        }
        var parameters: OATHParameters
        switch entry.type {
        case 0, 2: parameters = OATHParameters(kind: .totp, algorithm: algorithm, digits: digits)
        case 1:
            // int64 on the wire: a negative counter arrives as a huge unsigned value.
            guard entry.counter <= UInt64(Int64.max) else { throw ImportError(.malformed, "negative HOTP counter") }
            parameters = OATHParameters(kind: .hotp, algorithm: algorithm, digits: digits, counter: entry.counter)
        default: throw ImportError(.unsupported, "unknown OTP type value \(entry.type)")
        }

        // The name is the otpauth label: "account" or "issuer:account", split as otpauth URIs are.
        let (labelIssuer, account) = OTPAuthURI.splitLabel(entry.name)
        guard !account.isEmpty else { throw ImportError(.malformed, "no account name") }
        let issuer = entry.issuer.isEmpty ? labelIssuer.flatMap { $0.isEmpty ? nil : $0 } : entry.issuer
        return ImportedToken(kind: .oath(parameters), secret: secret, issuer: issuer, account: account, source: source)
    }

    private static func percentDecode(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            guard input[index] == UInt8(ascii: "%") else {
                out.append(input[index])
                index += 1
                continue
            }
            guard index + 2 < input.count,
                  let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2])
            else { return nil }
            out.append(high << 4 | low)
            index += 3
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func wipe(_ bytes: inout [UInt8]) {
        for index in bytes.indices { bytes[index] = 0 }
    }
}
