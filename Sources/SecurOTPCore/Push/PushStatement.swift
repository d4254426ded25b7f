import COpenSSL

/// What a device signs for one push request and what a host rebuilds from its own view of the
/// login to check the answer (docs/push.md, "The signed statement"). Every field is text;
/// absent values are "". The host fills `nonce` and `number` from what it chose itself, never
/// from the validator's answer.
public struct PushStatement: Sendable, Equatable {
    public var id: String
    public var user: String
    public var host: String
    public var service: String
    public var remoteAddress: String
    public var tty: String
    public var command: String
    /// 32 random bytes, base64url without padding, chosen by the host.
    public var nonce: String
    /// The six digits as typed on the device (the host: as it showed them).
    public var number: String
    /// Unix seconds, decimal.
    public var expires: String
    /// The device id (`dv…`).
    public var device: String

    public init(id: String, user: String, host: String, service: String, remoteAddress: String, tty: String,
                command: String, nonce: String, number: String, expires: String, device: String) {
        self.id = id
        self.user = user
        self.host = host
        self.service = service
        self.remoteAddress = remoteAddress
        self.tty = tty
        self.command = command
        self.nonce = nonce
        self.number = number
        self.expires = expires
        self.device = device
    }

    static let domain = Array("securotp-push-v1".utf8)

    /// `"securotp-push-v1" || field(id) || … || field(device)`, field(x) = uint32_be(len) || utf8.
    public var bytes: [UInt8] {
        var out = PushStatement.domain
        for value in [id, user, host, service, remoteAddress, tty, command, nonce, number, expires, device] {
            PushStatement.appendField(value, to: &out)
        }
        return out
    }

    /// SHA-256 of `bytes`: the WebAuthn challenge, 32 bytes.
    public var challenge: [UInt8] { PushStatement.sha256(bytes) }

    /// `uint32_be(len(utf8(x))) || utf8(x)`. Values longer than 4 GiB cannot occur (inputs are
    /// bounded far below); the length is truncated rather than trapping.
    public static func appendField(_ value: String, to out: inout [UInt8]) {
        let utf8 = Array(value.utf8)
        let length = UInt32(truncatingIfNeeded: utf8.count)
        out.append(UInt8(truncatingIfNeeded: length >> 24))
        out.append(UInt8(truncatingIfNeeded: length >> 16))
        out.append(UInt8(truncatingIfNeeded: length >> 8))
        out.append(UInt8(truncatingIfNeeded: length))
        out.append(contentsOf: utf8)
    }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                if let out = output.baseAddress { securotp_sha256(input.baseAddress, input.count, out) }
            }
        }
        return digest
    }
}
