import COpenSSL

/// The AES-based building blocks of RSA SecurID 128-bit tokens (research: securid-formats.md
/// §1.1): single-block AES, the Davies–Meyer style "SID-hash", its 15-bit prefix, and the
/// plain CBC-MAC that .sdtid files use.
///
/// Everything here works on byte arrays the caller owns; results that are key material are
/// returned in arrays the caller must wipe (`wipe(_:)`). No function traps on any input: a
/// wrong key or block length gives an empty result (or `false`).
public enum SecurIDCrypto {
    public static let blockSize = 16

    /// One AES block encrypted under a 16- or 32-byte key; empty if a length is wrong.
    public static func encryptBlock(key: [UInt8], _ block: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: blockSize)
        guard aesBlock(encrypt: true, key: key, block, into: &out) else { return [] }
        return out
    }

    /// One AES block decrypted under a 16- or 32-byte key; empty if a length is wrong.
    public static func decryptBlock(key: [UInt8], _ block: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: blockSize)
        guard aesBlock(encrypt: false, key: key, block, into: &out) else { return [] }
        return out
    }

    /// AES on one block into a caller-provided 16-byte array (no intermediate copies of the
    /// output). Returns false, leaving `out` zeroed, if any length is wrong.
    public static func aesBlock(encrypt: Bool, key: [UInt8], _ block: [UInt8], into out: inout [UInt8]) -> Bool {
        guard key.count == 16 || key.count == 32, block.count == blockSize, out.count == blockSize else {
            for index in out.indices { out[index] = 0 }
            return false
        }
        let bits = Int32(key.count * 8)
        let status = key.withUnsafeBufferPointer { k in
            block.withUnsafeBufferPointer { b in
                out.withUnsafeMutableBufferPointer { o -> Int32 in
                    guard let kp = k.baseAddress, let bp = b.baseAddress, let op = o.baseAddress else { return 0 }
                    return encrypt ? securotp_aes_encrypt_block(kp, bits, bp, op)
                                   : securotp_aes_decrypt_block(kp, bits, bp, op)
                }
            }
        }
        if status != 1 {
            for index in out.indices { out[index] = 0 }
            return false
        }
        return true
    }

    /// SID-hash (§1.1): 16 bytes. The state starts as sixteen 0xFF bytes; each 16-byte block
    /// of the zero-padded message (at least one block) is used as an AES key to encrypt the
    /// state, and the result is XORed back into it. An extra all-zero block evens out an odd
    /// count of blocks after the first, then a block holding the bit length (big-endian,
    /// 128 bits) is absorbed, and the output is the state XOR its encryption under itself.
    public static func sidHash(_ message: [UInt8]) -> [UInt8] {
        var state = [UInt8](repeating: 0xFF, count: blockSize)
        var block = [UInt8](repeating: 0, count: blockSize)
        var scratch = [UInt8](repeating: 0, count: blockSize)
        defer {
            wipe(&block)
            wipe(&scratch)
        }

        let blockCount = max(1, (message.count + blockSize - 1) / blockSize)
        var offset = 0
        for _ in 0..<blockCount {
            for index in 0..<blockSize {
                let source = offset + index
                block[index] = source < message.count ? message[source] : 0
            }
            absorb(&state, key: block, scratch: &scratch)
            offset += blockSize
        }
        if (blockCount - 1) % 2 == 1 {
            for index in 0..<blockSize { block[index] = 0 }
            absorb(&state, key: block, scratch: &scratch)
        }

        // Length in bits as a 128-bit big-endian number. Array counts fit in 63 bits, so the
        // bit count fits in 66: spread it over the low 9 bytes without overflowing.
        for index in 0..<blockSize { block[index] = 0 }
        var length = UInt64(message.count)
        block[blockSize - 1] = UInt8(truncatingIfNeeded: length << 3)
        length >>= 5
        var position = blockSize - 2
        while length > 0, position >= 0 {
            block[position] = UInt8(truncatingIfNeeded: length)
            length >>= 8
            position -= 1
        }
        absorb(&state, key: block, scratch: &scratch)

        // Finalisation: state XOR AES(key = state, state).
        // `key` shares the state's buffer until `absorb` writes to the state, which then gets
        // its own; the old buffer stays with `key` alone and is wiped in place.
        var key = state
        absorb(&state, key: key, scratch: &scratch)
        wipe(&key)
        return state
    }

    /// The first 15 bits of SID-hash: a small check value in CTF strings.
    public static func short15(_ message: [UInt8]) -> UInt16 {
        var hash = sidHash(message)
        defer { wipe(&hash) }
        guard hash.count >= 2 else { return 0 }
        return (UInt16(hash[0]) << 8 | UInt16(hash[1])) >> 1
    }

    /// CBC-MAC with an explicit IV (§1.1): the last block is zero-padded; no extra block is
    /// added when the data fills whole blocks. Empty if the key or IV length is wrong.
    public static func cbcMAC(key: [UInt8], iv: [UInt8], data: [UInt8]) -> [UInt8] {
        guard iv.count == blockSize, key.count == 16 || key.count == 32 else { return [] }
        var state = iv
        var input = [UInt8](repeating: 0, count: blockSize)
        defer { wipe(&input) }
        var offset = 0
        while offset < data.count {
            for index in 0..<blockSize {
                let source = offset + index
                input[index] = state[index] ^ (source < data.count ? data[source] : 0)
            }
            guard aesBlock(encrypt: true, key: key, input, into: &state) else { return [] }
            offset += blockSize
        }
        return state
    }

    /// Overwrites an array's bytes in a way the optimiser keeps, then empties it.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { securotp_cleanse(base, raw.count) }
        }
        bytes.removeAll()
    }

    /// state := state XOR AES(key, state).
    private static func absorb(_ state: inout [UInt8], key: [UInt8], scratch: inout [UInt8]) {
        _ = aesBlock(encrypt: true, key: key, state, into: &scratch)
        for index in 0..<blockSize { state[index] ^= scratch[index] }
    }
}
