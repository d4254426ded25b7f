extension QRCode {
    /// Largest accepted `scale` and `quietZone`; bigger values are clamped so the pixel
    /// arithmetic can never overflow (a version 40 symbol at the limits is ~17k px wide).
    static let maxPNGScale = 64
    static let maxQuietZone = 64

    /// A 1-bit grayscale PNG: each module `scale` pixels, `quietZone` modules of white border.
    /// `scale` is clamped to 1...64 and `quietZone` to 0...64.
    public func png(scale: Int = 8, quietZone: Int = 4) -> [UInt8] {
        let scale = min(max(scale, 1), Self.maxPNGScale)
        let quietZone = min(max(quietZone, 0), Self.maxQuietZone)
        let modulesPerSide = size + 2 * quietZone
        let pixels = modulesPerSide * scale

        // Raw scanlines: filter type 0 (None), then pixels packed 8 per byte, MSB first,
        // 1 = white. Rows repeat per module, so build one row per module row and copy it.
        let rowBytes = (pixels + 7) / 8
        var raw: [UInt8] = []
        raw.reserveCapacity((rowBytes + 1) * pixels)
        for moduleY in 0..<modulesPerSide {
            var row = [UInt8](repeating: 0, count: rowBytes + 1)
            for px in 0..<pixels {
                let dark = isDark(x: px / scale - quietZone, y: moduleY - quietZone)
                if !dark { row[1 + px / 8] |= UInt8(0x80) >> UInt8(px % 8) }
            }
            for _ in 0..<scale { raw.append(contentsOf: row) }
        }

        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header: [UInt8] = []
        header.appendBigEndian(UInt32(pixels)) // width
        header.appendBigEndian(UInt32(pixels)) // height
        header += [1, 0, 0, 0, 0] // bit depth 1, grayscale, deflate, adaptive filter, no interlace
        png.appendChunk("IHDR", header)
        png.appendChunk("IDAT", ZlibStored.compress(raw))
        png.appendChunk("IEND", [])
        return png
    }
}

/// A zlib stream (RFC 1950) whose deflate data (RFC 1951) is only stored blocks: no
/// compression, but trivially correct, and QR images are small.
enum ZlibStored {
    static let maxBlock = 65535

    static func compress(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01] // deflate, 32K window; 0x7801 is a multiple of 31
        out.reserveCapacity(data.count + data.count / maxBlock * 5 + 16)
        var offset = 0
        repeat {
            let length = min(maxBlock, data.count - offset)
            let isFinal = offset + length >= data.count
            out.append(isFinal ? 1 : 0) // BFINAL bit, BTYPE 00 = stored; rest of byte is padding
            let len = UInt16(length)
            out += [UInt8(len & 0xFF), UInt8(len >> 8), UInt8(~len & 0xFF), UInt8(~len >> 8)]
            out += data[offset..<(offset + length)]
            offset += length
        } while offset < data.count
        out.appendBigEndian(Checksum.adler32(data))
        return out
    }
}

extension [UInt8] {
    mutating func appendBigEndian(_ value: UInt32) {
        append(UInt8(value >> 24))
        append(UInt8((value >> 16) & 0xFF))
        append(UInt8((value >> 8) & 0xFF))
        append(UInt8(value & 0xFF))
    }

    /// Length, type, data, then CRC-32 over type and data.
    mutating func appendChunk(_ type: String, _ data: [UInt8]) {
        let typeBytes = Array(type.utf8)
        appendBigEndian(UInt32(data.count))
        append(contentsOf: typeBytes)
        append(contentsOf: data)
        appendBigEndian(Checksum.crc32(data, continuing: Checksum.crc32(typeBytes)))
    }
}
