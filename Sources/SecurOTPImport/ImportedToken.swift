import SecurOTPCore
import SecurOTPSecurID

@_exported import enum SecurOTPCore.PINMode

/// One token read from an import source, before it is sealed into the store.
public struct ImportedToken {
    public enum Kind: Sendable, Equatable {
        case oath(OATHParameters)
        case securID(SecurIDParameters)
    }

    public var kind: Kind
    public var secret: SecretBytes
    /// The serial the issuer gave the token (SecurID: 12 digits; PSKC: any), if any.
    public var serial: String?
    public var issuer: String?
    public var account: String?
    public var pinMode: PINMode
    /// Unix time after which the token must not be used, if the source says.
    public var expires: Int64?
    /// Which format it came from: "otpauth", "otpauth-migration", "pskc", "sdtid", "ctf".
    public var source: String

    public init(kind: Kind, secret: SecretBytes, serial: String? = nil, issuer: String? = nil, account: String? = nil,
                pinMode: PINMode = .none, expires: Int64? = nil, source: String) {
        self.kind = kind
        self.secret = secret
        self.serial = serial
        self.issuer = issuer
        self.account = account
        self.pinMode = pinMode
        self.expires = expires
        self.source = source
    }
}

/// What an import needs besides the bytes.
public struct ImportOptions {
    /// Token or container password (SDTID, CTF, PSKC PBKDF2).
    public var password: [UInt8]?
    /// Pre-shared transport key (PSKC).
    public var transportKey: SecretBytes?
    /// This host's binding ID for the user: device-ID-protected tokens must be bound to it.
    public var bindingID: String?
    /// Now, for expiry checks.
    public var now: Int64

    public init(password: [UInt8]? = nil, transportKey: SecretBytes? = nil, bindingID: String? = nil, now: Int64) {
        self.password = password
        self.transportKey = transportKey
        self.bindingID = bindingID
        self.now = now
    }
}

/// Why an import was refused. Nothing is written when any token of a source fails.
public struct ImportError: Error, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case unrecognized     // not a format securotp knows
        case malformed        // structure, length, encoding, XML
        case checksum         // CTF checksum, MAC, HMAC
        case password         // missing or wrong password / transport key
        case deviceBinding    // bound to another device ID or binding ID
        case expired          // token expiry in the past
        case unsupported      // a known format using a feature securotp does not support
        case tooLarge         // input beyond the size limit
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
    public static func == (a: ImportError, b: ImportError) -> Bool { a.code == b.code }
}
