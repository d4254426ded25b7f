import COpenSSL

/// Salted, deliberately slow hashing of short secrets (PINs, recovery codes): PBKDF2-HMAC-SHA256
/// (RFC 8018 §5.2) over libcrypto's low-level HMAC, so the PAM module needs no EVP/provider
/// start-up.
///
/// A stored record is self-describing ASCII:
///
///     pbkdf2-sha256$<iterations>$<salt, lowercase hex>$<32-byte hash, lowercase hex>
///
/// e.g. `pbkdf2-sha256$150000$<32 hex digits>$<64 hex digits>`. The iteration count is decimal
/// without leading zeros; the salt is 16 random bytes when `hash` makes it (16–64 are read).
/// `verify` refuses anything else — another shape, upper-case hex, an iteration count outside
/// `iterationRange` — without computing a hash.
public enum SlowHash {
    /// Iterations that take about 30 ms for one hash on the reference machine (2-core AMD EPYC
    /// VM with SHA extensions, release build: ~0.195 µs per iteration, 29 ms for 150,000;
    /// Python's hashlib, i.e. OpenSSL's own PBKDF2, takes 32 ms for the same). Each iteration
    /// is one full HMAC over the low-level digest.
    public static let defaultIterations = 150_000
    /// What `hash` accepts and `verify` reads. The upper bound caps what a tampered record can
    /// cost (~0.4 s on the reference machine); the lower bound refuses records too weak to keep.
    public static let iterationRange = 10_000...2_000_000
    public static let saltLength = 16
    public static let hashLength = 32
    public static let storedSaltLengths = 16...64

    static let identifier = Array("pbkdf2-sha256".utf8)
    static let separator = UInt8(ascii: "$")
    static let maximumRecordLength = 256

    /// A new record for `secret` with a fresh random salt. Nil if `iterations` is outside
    /// `iterationRange` or the kernel gives no randomness.
    public static func hash(_ secret: UnsafeBufferPointer<UInt8>, iterations: Int = defaultIterations) -> [UInt8]? {
        guard iterationRange.contains(iterations), let salt = SecretBytes.random(count: saltLength) else { return nil }
        let saltBytes = salt.withUnsafeBytes { Array($0) }
        guard let derived = pbkdf2SHA256(password: secret, salt: saltBytes, iterations: iterations, length: hashLength)
        else { return nil }
        var record = identifier
        record.append(separator)
        record.append(contentsOf: decimal(iterations))
        record.append(separator)
        record.append(contentsOf: hexadecimal(saltBytes))
        record.append(separator)
        derived.withUnsafeBytes { record.append(contentsOf: hexadecimal($0)) }
        return record
    }

    /// Whether `secret` is the one `stored` was made from. Malformed records are refused; the
    /// hashes are compared in constant time.
    public static func verify(_ secret: UnsafeBufferPointer<UInt8>, against stored: [UInt8]) -> Bool {
        guard let record = parse(stored),
              let derived = pbkdf2SHA256(password: secret, salt: record.salt, iterations: record.iterations,
                                         length: hashLength)
        else { return false }
        return derived.withUnsafeBytes { ours in
            record.hash.withUnsafeBufferPointer { theirs in ConstantTime.equal(ours, theirs) }
        }
    }

    /// Convenience for a secret held in `SecretBytes`.
    public static func hash(_ secret: SecretBytes, iterations: Int = defaultIterations) -> [UInt8]? {
        secret.withUnsafeBytes { hash($0, iterations: iterations) }
    }

    public static func verify(_ secret: SecretBytes, against stored: [UInt8]) -> Bool {
        secret.withUnsafeBytes { verify($0, against: stored) }
    }

    /// PBKDF2 (RFC 8018 §5.2) with HMAC-SHA256 as the PRF: `length` bytes (1–8160). Nil for
    /// a length or iteration count out of range (iterations 1–100,000,000).
    public static func pbkdf2SHA256(password: UnsafeBufferPointer<UInt8>, salt: [UInt8], iterations: Int,
                                    length: Int) -> SecretBytes? {
        guard iterations >= 1, iterations <= 100_000_000, length >= 1, length <= 255 * 32,
              salt.count <= 1024 else { return nil }
        let output = SecretBytes(count: length)
        let block = SecretBytes(count: salt.count + 4) // S ‖ INT(i)
        let mac = SecretBytes(count: 64) // securotp_hmac writes up to 64 bytes
        let sum = SecretBytes(count: 32) // T_i
        let previous = SecretBytes(count: 32) // U_{j-1}
        let blocks = (length + 31) / 32
        var produced = 0
        for blockIndex in 1...blocks {
            block.withUnsafeMutableBytes { input in
                for (index, byte) in salt.enumerated() where index < input.count { input[index] = byte }
                var shift: UInt32 = 24
                for index in salt.count..<input.count {
                    input[index] = UInt8(truncatingIfNeeded: UInt32(truncatingIfNeeded: blockIndex) >> shift)
                    shift &-= 8
                }
            }
            let ok = mac.withUnsafeMutableBytes { macBytes in
                previous.withUnsafeMutableBytes { previousBytes in
                    sum.withUnsafeMutableBytes { sumBytes in
                        block.withUnsafeBytes { first in
                            iterate(password: password, first: first, iterations: iterations,
                                    mac: macBytes, previous: previousBytes, sum: sumBytes)
                        }
                    }
                }
            }
            guard ok else { return nil }
            output.withUnsafeMutableBytes { out in
                sum.withUnsafeBytes { bytes in
                    var index = 0
                    while index < bytes.count, produced < out.count {
                        out[produced] = bytes[index]
                        produced += 1
                        index += 1
                    }
                }
            }
        }
        return output
    }

    /// T = U_1 ⊕ … ⊕ U_c with U_1 = HMAC(P, first) and U_j = HMAC(P, U_{j-1}). `previous`
    /// holds U_{j-1} (the MAC is never written over its own message).
    private static func iterate(password: UnsafeBufferPointer<UInt8>, first: UnsafeBufferPointer<UInt8>, iterations: Int,
                                mac: UnsafeMutableBufferPointer<UInt8>, previous: UnsafeMutableBufferPointer<UInt8>,
                                sum: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        guard let out = mac.baseAddress, let last = previous.baseAddress,
              mac.count >= 64, previous.count == 32, sum.count == 32 else { return false }
        // An empty password or salt passes a nil pointer with length 0, which the C side never reads.
        guard securotp_hmac(Int32(SECUROTP_SHA256), password.baseAddress, password.count,
                            first.baseAddress, first.count, out) == 32 else { return false }
        for index in 0..<32 {
            sum[index] = mac[index]
            previous[index] = mac[index]
        }
        var round = 1
        while round < iterations {
            guard securotp_hmac(Int32(SECUROTP_SHA256), password.baseAddress, password.count, last, 32, out) == 32
            else { return false }
            for index in 0..<32 {
                sum[index] ^= mac[index]
                previous[index] = mac[index]
            }
            round += 1
        }
        return true
    }

    // MARK: - Record format

    struct Record {
        var iterations: Int
        var salt: [UInt8]
        var hash: [UInt8]
    }

    static func parse(_ stored: [UInt8]) -> Record? {
        guard stored.count <= maximumRecordLength else { return nil }
        var fields: [[UInt8]] = [[]]
        for byte in stored {
            if byte == separator {
                guard fields.count < 4 else { return nil }
                fields.append([])
            } else {
                fields[fields.count - 1].append(byte)
            }
        }
        guard fields.count == 4, fields[0] == identifier,
              let iterations = parseDecimal(fields[1]), iterationRange.contains(iterations),
              let salt = parseHex(fields[2]), storedSaltLengths.contains(salt.count),
              let hash = parseHex(fields[3]), hash.count == hashLength
        else { return nil }
        return Record(iterations: iterations, salt: salt, hash: hash)
    }

    /// Canonical decimal: 1–9 digits, no leading zero (so no overflow and one spelling per value).
    static func parseDecimal(_ digits: [UInt8]) -> Int? {
        guard let first = digits.first, digits.count <= 9, first != UInt8(ascii: "0") else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }

    /// Lowercase hex only, an even number of digits.
    static func parseHex(_ digits: [UInt8]) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(digits.count / 2)
        var high: UInt8 = 0
        for (index, digit) in digits.enumerated() {
            let value: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = digit - UInt8(ascii: "a") + 10
            default: return nil
            }
            if index % 2 == 0 { high = value } else { out.append(high << 4 | value) }
        }
        return out
    }

    static func decimal(_ value: Int) -> [UInt8] {
        guard value > 0 else { return [UInt8(ascii: "0")] }
        var digits = [UInt8]()
        var rest = value
        while rest > 0 {
            digits.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10))
            rest /= 10
        }
        return Array(digits.reversed())
    }

    static func hexadecimal(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return out
    }
}
