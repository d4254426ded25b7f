import COpenSSL

/// Key material kept out of `String` and out of copy-on-write arrays: one heap buffer that this
/// object owns and wipes (OPENSSL_cleanse) when it goes away (docs/design.md, "What the
/// module may link").
public final class SecretBytes {
    public let count: Int
    private let storage: UnsafeMutablePointer<UInt8>

    public init(count: Int) {
        self.count = max(0, count)
        storage = .allocate(capacity: max(1, self.count))
        storage.initialize(repeating: 0, count: max(1, self.count))
    }

    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count)
        var index = 0
        for byte in bytes {
            storage[index] = byte
            index += 1
        }
    }

    deinit {
        securotp_cleanse(storage, max(1, count))
        storage.deallocate()
    }

    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafeBufferPointer(start: storage, count: count))
    }

    public func withUnsafeMutableBytes<R, E: Error>(_ body: (UnsafeMutableBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafeMutableBufferPointer(start: storage, count: count))
    }

    /// Fresh kernel randomness; nil only if getrandom(2) fails.
    public static func random(count: Int) -> SecretBytes? {
        let secret = SecretBytes(count: count)
        let ok = secret.withUnsafeMutableBytes { buffer in
            buffer.baseAddress.map { securotp_random($0, buffer.count) == 1 } ?? true
        }
        return ok ? secret : nil
    }

    /// Constant-time comparison of the contents (length is not secret).
    public func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { a in other.withUnsafeBytes { b in ConstantTime.equal(a, b) } }
    }
}
