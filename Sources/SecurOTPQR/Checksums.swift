/// The two checksums a PNG needs: CRC-32 per chunk (ISO 3309 / ITU-T V.42, as used by PNG and
/// zlib's crc32) and Adler-32 at the end of the zlib stream (RFC 1950).
enum Checksum {
    /// Byte-at-a-time table for the reflected polynomial 0xEDB88320.
    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// CRC-32 continued from `crc` (pass the previous result to checksum data in pieces).
    static func crc32(_ bytes: some Sequence<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        for byte in bytes {
            c = crcTable[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8)
        }
        return ~c
    }

    static func adler32(_ bytes: some Sequence<UInt8>) -> UInt32 {
        let modulus: UInt32 = 65521
        var a: UInt32 = 1
        var b: UInt32 = 0
        var pending = 0
        for byte in bytes {
            a += UInt32(byte)
            b += a
            pending += 1
            // 5552 bytes is the most that cannot overflow 32 bits before reducing (zlib's NMAX).
            if pending == 5552 {
                a %= modulus
                b %= modulus
                pending = 0
            }
        }
        return (b % modulus) << 16 | (a % modulus)
    }
}
