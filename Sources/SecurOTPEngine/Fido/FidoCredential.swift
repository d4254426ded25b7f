import SecurOTPCore

/// One FIDO2/U2F credential as pam_u2f's authfile keeps it (docs/fido.md): the key handle
/// (credential ID), the raw public key, its type and the attributes that say what a login asks
/// the key for; plus what securotp keeps beside it: the RP ID ("origin") it was made for and
/// the last signature counter accepted.
public struct FidoCredential: Sendable, Equatable {
    public enum KeyType: String, Sendable, Equatable {
        case es256, eddsa, rs256
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

    /// Parses one pam_u2f credential (`KH,PK,type,attributes` with `*` as KH for a resident
    /// credential, or the old U2F-format `KH,PK`, checked against `appID`); nil with the reason.
    public static func parse(field: Substring, origin: String, appID: String? = nil) -> (credential: FidoCredential?, problem: String) {
        let parts = field.split(separator: ",", omittingEmptySubsequences: false)
        if parts.count == 2 { return parseOldFormat(handle: parts[0], key: parts[1], appID: appID ?? origin) }
        guard parts.count == 4 else { return (nil, "a credential must be KH,PK,type,attributes (or the old KH,PK)") }
        let handle: [UInt8]
        if parts[0] == "*" {
            handle = []
        } else {
            guard let decoded = Base64.decode(String(parts[0]), .standard), !decoded.isEmpty, decoded.count <= maxKeyHandle else {
                return (nil, "the key handle is not base64 (or is empty or longer than \(maxKeyHandle) bytes)")
            }
            handle = decoded
        }
        guard var key = Base64.decode(String(parts[1]), .standard), !key.isEmpty, key.count <= maxPublicKey else {
            return (nil, "the public key is not base64 (or is empty or longer than \(maxPublicKey) bytes)")
        }
        guard let type = KeyType(rawValue: String(parts[2])) else {
            return (nil, "unknown key type \(TerminalText.quoted(String(parts[2]))) (es256, eddsa, rs256)")
        }
        // es256: x||y, or the same with the 0x04 prefix of an uncompressed point.
        if type == .es256, key.count == 65, key.first == 0x04 { key.removeFirst() }
        if type == .es256, key.count != 64 { return (nil, "an es256 public key must be 64 bytes (x||y)") }
        if type == .eddsa, key.count != 32 { return (nil, "an eddsa public key must be 32 bytes") }
        if type == .rs256, key.count != rs256KeyLength { return (nil, "an rs256 public key must be 259 bytes (n||e of an RSA-2048 key)") }
        var presence = false, verification = false, pin = false
        var rest = Substring(parts[3])
        while !rest.isEmpty {
            if rest.hasPrefix("+presence") {
                presence = true
                rest = rest.dropFirst("+presence".count)
            } else if rest.hasPrefix("+verification") {
                verification = true
                rest = rest.dropFirst("+verification".count)
            } else if rest.hasPrefix("+pin") {
                pin = true
                rest = rest.dropFirst("+pin".count)
            } else {
                return (nil, "unknown attributes \(TerminalText.quoted(String(parts[3]))) (+presence, +verification, +pin)")
            }
        }
        return (FidoCredential(keyHandle: handle, publicKey: key, type: type, presence: presence, verification: verification,
                               pin: pin, origin: origin), "")
    }

    /// pamu2fcfg 1.0's `KH,PK`: the key handle in web-safe base64 (pam_u2f normalises it), the
    /// public key as the hex of the 65-byte uncompressed P-256 point; ES256, `+presence`, for the app ID.
    static func parseOldFormat(handle: Substring, key: Substring, appID: String) -> (credential: FidoCredential?, problem: String) {
        var normalised = Array(handle.utf8).map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0 }
        while normalised.count % 4 != 0 { normalised.append(UInt8(ascii: "=")) }
        guard let keyHandle = Base64.decode(normalised, .standard), !keyHandle.isEmpty, keyHandle.count <= maxKeyHandle else {
            return (nil, "old U2F-format credential: the key handle is not web-safe base64 (or is empty or longer than \(maxKeyHandle) bytes)")
        }
        guard key.utf8.count == 130, let point = Hex.decode(String(key)), point.first == 0x04 else {
            return (nil, "old U2F-format credential: the public key must be the hex of a 65-byte uncompressed P-256 point (04...)")
        }
        return (FidoCredential(keyHandle: keyHandle, publicKey: Array(point.dropFirst()), type: .es256, presence: true, verification: false,
                               pin: false, origin: appID), "")
    }

    /// Parses a pam_u2f authfile line (`user:cred[:cred...]`) or pamu2fcfg -n's `:cred`.
    /// Returns the user named (empty for `-n` output) and the credentials, or the problem.
    public static func parse(line: String, origin: String, appID: String? = nil) -> (user: String, credentials: [FidoCredential], problem: String) {
        var text = Substring(line)
        while let last = text.last, last == "\n" || last == "\r" || last == " " { text = text.dropLast() }
        while let first = text.first, first == " " { text = text.dropFirst() }
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count >= 2 else { return ("", [], "not a pam_u2f line (user:KH,PK,type,attributes)") }
        var credentials: [FidoCredential] = []
        for field in fields.dropFirst() {
            let (credential, problem) = parse(field: field, origin: origin, appID: appID)
            guard let credential else { return (String(fields[0]), [], problem) }
            credentials.append(credential)
        }
        return (String(fields[0]), credentials, "")
    }
}
