/// A deliberately tiny PNG reader for the tests: checks chunk CRCs, inflates stored-only
/// deflate data, checks Adler-32, and unpacks 1-bit grayscale rows. Its CRC and Adler are
/// bit-by-bit re-implementations, independent of the table-driven ones under test.
enum PNGReader {
    struct Failure: Error, CustomStringConvertible { let description: String }

    struct Chunk { let type: String; let data: [UInt8] }

    struct Image {
        let width: Int
        let height: Int
        let rows: [[UInt8]] // packed pixels, filter byte removed
        let storedBlocks: Int

        func white(_ x: Int, _ y: Int) -> Bool { (rows[y][x / 8] >> (7 - UInt8(x % 8))) & 1 == 1 }
    }

    static func be32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func readBE32(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
    }

    static func slowCRC32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~crc
    }

    static func slowAdler32(_ bytes: [UInt8]) -> UInt32 {
        var a = 1, b = 0
        for byte in bytes { a = (a + Int(byte)) % 65521; b = (b + a) % 65521 }
        return UInt32(b << 16 | a)
    }

    static func chunks(_ png: [UInt8]) throws -> [Chunk] {
        guard png.count >= 8, Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else {
            throw Failure(description: "bad signature")
        }
        var result: [Chunk] = []
        var at = 8
        while at < png.count {
            guard at + 12 <= png.count else { throw Failure(description: "truncated chunk header") }
            let length = readBE32(png[at...])
            guard at + 12 + length <= png.count else { throw Failure(description: "truncated chunk") }
            let typeAndData = Array(png[(at + 4)..<(at + 8 + length)])
            let crc = readBE32(png[(at + 8 + length)...])
            guard UInt32(crc) == slowCRC32(typeAndData) else { throw Failure(description: "bad CRC") }
            result.append(Chunk(type: String(decoding: typeAndData.prefix(4), as: UTF8.self),
                                data: Array(typeAndData.dropFirst(4))))
            at += 12 + length
        }
        return result
    }

    static func decodeOneBitGray(_ png: [UInt8]) throws -> Image {
        let all = try chunks(png)
        guard let ihdr = all.first, ihdr.type == "IHDR", ihdr.data.count == 13 else {
            throw Failure(description: "missing IHDR")
        }
        let width = readBE32(ihdr.data[0...]), height = readBE32(ihdr.data[4...])
        guard Array(ihdr.data[8...]) == [1, 0, 0, 0, 0] else { throw Failure(description: "not 1-bit gray") }
        let zlib = all.filter { $0.type == "IDAT" }.flatMap(\.data)

        // zlib header, then stored blocks only.
        guard zlib.count >= 6, (Int(zlib[0]) << 8 | Int(zlib[1])) % 31 == 0, zlib[0] & 0x0F == 8 else {
            throw Failure(description: "bad zlib header")
        }
        var raw: [UInt8] = []
        var at = 2
        var blocks = 0
        var final = false
        while !final {
            guard at + 5 <= zlib.count else { throw Failure(description: "truncated deflate") }
            final = zlib[at] & 1 == 1
            guard (zlib[at] >> 1) & 3 == 0 else { throw Failure(description: "not a stored block") }
            let len = Int(zlib[at + 1]) | Int(zlib[at + 2]) << 8
            let nlen = Int(zlib[at + 3]) | Int(zlib[at + 4]) << 8
            guard len ^ nlen == 0xFFFF, at + 5 + len <= zlib.count else { throw Failure(description: "bad LEN/NLEN") }
            raw += zlib[(at + 5)..<(at + 5 + len)]
            at += 5 + len
            blocks += 1
        }
        guard at + 4 == zlib.count, UInt32(readBE32(zlib[at...])) == slowAdler32(raw) else {
            throw Failure(description: "bad Adler-32 or trailing data")
        }

        let stride = (width + 7) / 8 + 1
        guard raw.count == stride * height else { throw Failure(description: "wrong image data size") }
        var rows: [[UInt8]] = []
        for y in 0..<height {
            let row = raw[(y * stride)..<((y + 1) * stride)]
            guard row.first == 0 else { throw Failure(description: "unexpected filter type") }
            rows.append(Array(row.dropFirst()))
        }
        return Image(width: width, height: height, rows: rows, storedBlocks: blocks)
    }
}
