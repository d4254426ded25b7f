import SecurOTPCore

/// One FIDO2/U2F credential as pam_u2f's authfile keeps it (docs/fido.md): the key handle
/// (credential ID), the raw public key, its type and the attributes that say what a login asks
/// the key for; plus what securotp keeps beside it: the RP ID ("origin") it was made for and
/// the last signature counter accepted.
public struct FidoCredential: Sendable, Equatable {
    public enum KeyType: String, Sendable, Equatable {
        case es256, eddsa, rs256

        /// pam_u2f's cose_type: strcasecmp against es256, rs256, eddsa.
        init?(asciiCaseInsensitive bytes: ArraySlice<UInt8>) {
            let lowered = bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
            for type in [KeyType.es256, .eddsa, .rs256] where lowered.elementsEqual(type.rawValue.utf8) {
                self = type
                return
            }
            return nil
        }
    }

    /// Empty for a resident (discoverable) credential: pamu2fcfg -r prints `*`, and the login
    /// asks the key for whatever credential it holds for the origin.
    public var keyHandle: [UInt8]
    /// ES256: x||y (64 bytes); EdDSA: the 32-byte key; RS256: n||e.
    public var publicKey: [UInt8]
    public var type: KeyType
    /// `+presence`: touch required; `+verification`: the key verifies the user (UV);
    /// `+pin`: the key's PIN is asked for (which also gives UV).
    public var presence: Bool
    public var verification: Bool
    public var pin: Bool
    public var origin: String
    /// A resident (discoverable) credential: key handle `*` in a pam_u2f line.
    public var resident: Bool { keyHandle.isEmpty }

    /// Stored state (not part of a pam_u2f line).
    public var serial = ""
    public var counter: UInt32 = 0
    /// A counter that did not increase was seen: the key was cloned; never used again.
    public var cloned = false
    public var created: Int64 = 0
    public var lastUsed: Int64 = 0
    public var source = "enroll"

    public init(keyHandle: [UInt8], publicKey: [UInt8], type: KeyType, presence: Bool, verification: Bool, pin: Bool,
                origin: String) {
        self.keyHandle = keyHandle
        self.publicKey = publicKey
        self.type = type
        self.presence = presence
        self.verification = verification
        self.pin = pin
        self.origin = origin
    }

    /// The `+presence+verification+pin` part of a line, in pam_u2f's order.
    public var attributes: String {
        (presence ? "+presence" : "") + (verification ? "+verification" : "") + (pin ? "+pin" : "")
    }

    /// `KH,PK,type,attributes`, as pamu2fcfg prints it (`*` as KH for a resident credential).
    public var u2fField: String {
        (resident ? "*" : Base64.encode(keyHandle, .standard)) + "," + Base64.encode(publicKey, .standard) + "," + type.rawValue + "," + attributes
    }

    /// `user:KH,PK,type,attrs:KH,...`: one pam_u2f authfile line.
    public static func u2fLine(user: String, _ credentials: [FidoCredential]) -> String {
        ([user] + credentials.map { $0.u2fField }).joined(separator: ":")
    }

    /// Largest key handle and public key accepted (real keys use up to a few hundred bytes;
    /// an RS256 key is 259).
    public static let maxKeyHandle = 1024
    public static let maxPublicKey = 1024
    /// RS256: n (256 bytes) || e (3 bytes), libfido2's rs256_pk_t as pamu2fcfg prints it.
    public static let rs256KeyLength = 259

    /// The same credential: the key handle, or for resident credentials (no key handle) the public key.
    public func isSameCredential(as other: FidoCredential) -> Bool {
        resident || other.resident ? resident == other.resident && publicKey == other.publicKey : keyHandle == other.keyHandle
    }

    /// Parses one pam_u2f credential as pam_u2f 1.4.0 reads it: the `,`-separated fields, empty
    /// ones skipped (strtok_r); `KH,PK` is the old U2F format (checked against `appID`);
    /// `KH,PK,type[,attributes[,...]]` otherwise, `*` as KH for a resident credential, the type
    /// in any case (es256, eddsa, rs256), fields after the attributes ignored, and each of
    /// `+presence`, `+verification`, `+pin` set when the attributes contain it (strstr: other
    /// text, a `\r` from a CRLF file included, adds nothing). Nil with the reason.
    public static func parse(field: Substring, origin: String, appID: String? = nil) -> (credential: FidoCredential?, problem: String) {
        parse(fieldBytes: ArraySlice(field.utf8), origin: origin, appID: appID)
    }

    public static func parse(fieldBytes field: ArraySlice<UInt8>, origin: String, appID: String? = nil) -> (credential: FidoCredential?, problem: String) {
        let parts = U2FMappingFile.split(field, on: UInt8(ascii: ","))
        guard parts.count >= 2 else { return (nil, "a credential must be KH,PK,type,attributes (or the old KH,PK)") }
        if parts.count == 2 { return parseOldFormat(handle: parts[0], key: parts[1], appID: appID ?? origin) }
        let handle: [UInt8]
        if parts[0].elementsEqual("*".utf8) {
            handle = []
        } else {
            guard let decoded = Base64.decode(Array(parts[0]), .standard), !decoded.isEmpty, decoded.count <= maxKeyHandle else {
                return (nil, "the key handle is not base64 (or is empty or longer than \(maxKeyHandle) bytes)")
            }
            handle = decoded
        }
        guard var key = Base64.decode(Array(parts[1]), .standard), !key.isEmpty, key.count <= maxPublicKey else {
            return (nil, "the public key is not base64 (or is empty or longer than \(maxPublicKey) bytes)")
        }
        guard let type = KeyType(asciiCaseInsensitive: parts[2]) else {
            return (nil, "unknown key type \(TerminalText.quoted(String(decoding: parts[2], as: UTF8.self))) (es256, eddsa, rs256)")
        }
        // es256: x||y, or the same with the 0x04 prefix of an uncompressed point.
        if type == .es256, key.count == 65, key.first == 0x04 { key.removeFirst() }
        if type == .es256, key.count != 64 { return (nil, "an es256 public key must be 64 bytes (x||y)") }
        if type == .eddsa, key.count != 32 { return (nil, "an eddsa public key must be 32 bytes") }
        if type == .rs256, key.count != rs256KeyLength { return (nil, "an rs256 public key must be 259 bytes (n||e of an RSA-2048 key)") }
        let attributes = parts.count > 3 ? parts[3] : []
        return (FidoCredential(keyHandle: handle, publicKey: key, type: type, presence: contains(attributes, "+presence"),
                               verification: contains(attributes, "+verification"), pin: contains(attributes, "+pin"),
                               origin: origin), "")
    }

    /// strstr: `needle` occurs in `bytes`.
    static func contains(_ bytes: ArraySlice<UInt8>, _ needle: StaticString) -> Bool {
        let wanted = Array(UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount))
        guard bytes.count >= wanted.count else { return false }
        var start = bytes.startIndex
        while start + wanted.count <= bytes.endIndex {
            if bytes[start..<start + wanted.count].elementsEqual(wanted) { return true }
            start += 1
        }
        return false
    }

    /// pamu2fcfg 1.0's `KH,PK`: the key handle in web-safe base64 (pam_u2f normalises it), the
    /// public key as the hex of the 65-byte uncompressed P-256 point; ES256, `+presence`, for the app ID.
    static func parseOldFormat(handle: ArraySlice<UInt8>, key: ArraySlice<UInt8>, appID: String) -> (credential: FidoCredential?, problem: String) {
        var normalised = handle.map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0 }
        while normalised.count % 4 != 0 { normalised.append(UInt8(ascii: "=")) }
        guard let keyHandle = Base64.decode(normalised, .standard), !keyHandle.isEmpty, keyHandle.count <= maxKeyHandle else {
            return (nil, "old U2F-format credential: the key handle is not web-safe base64 (or is empty or longer than \(maxKeyHandle) bytes)")
        }
        guard key.count == 130, let point = Hex.decode(String(decoding: key, as: UTF8.self)), point.first == 0x04 else {
            return (nil, "old U2F-format credential: the public key must be the hex of a 65-byte uncompressed P-256 point (04...)")
        }
        return (FidoCredential(keyHandle: keyHandle, publicKey: Array(point.dropFirst()), type: .es256, presence: true, verification: false,
                               pin: false, origin: appID), "")
    }

    /// Parses one pam_u2f authfile line (`user:cred[:cred...]`) or pamu2fcfg -n's `:cred`, read
    /// as a line of the mapping file is (U2FMappingFile): one `\n` at the end is the line's end,
    /// empty `:` fields (a trailing `:` or `::`) are skipped. Returns the user named (empty for
    /// `-n` output) and the credentials in the line's order, or the problem.
    public static func parse(line: String, origin: String, appID: String? = nil) -> (user: String, credentials: [FidoCredential], problem: String) {
        var bytes = ArraySlice(line.utf8)
        if bytes.last == 0x0A { bytes = bytes.dropLast() }
        guard !bytes.contains(0x0A), !bytes.contains(0) else { return ("", [], "one pam_u2f line, not several") }
        let bare = bytes.first == UInt8(ascii: ":")
        let fields = U2FMappingFile.split(bytes, on: UInt8(ascii: ":"))
        let user = bare ? "" : fields.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let given = bare ? fields[...] : fields.dropFirst()
        guard !given.isEmpty else { return (user, [], "not a pam_u2f line (user:KH,PK,type,attributes)") }
        var credentials: [FidoCredential] = []
        for field in given {
            let (credential, problem) = parse(fieldBytes: field, origin: origin, appID: appID)
            guard let credential else { return (user, [], problem) }
            credentials.append(credential)
        }
        return (user, credentials, "")
    }
}
