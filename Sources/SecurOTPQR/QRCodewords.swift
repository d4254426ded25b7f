/// Turning input bytes into the final codeword sequence: byte-mode bit stream with padding
/// (§7.4), split into Reed–Solomon blocks and interleaved (§7.6).
enum QRCodewords {
    /// Data codewords for `bytes` in byte mode, padded to the version's data capacity. The
    /// caller has already checked that the bytes fit.
    static func dataCodewords(_ bytes: [UInt8], version: Int, errorCorrection: QRErrorCorrection) -> [UInt8] {
        let capacity = QRTables.dataCodewords(version: version, errorCorrection: errorCorrection)
        var bits = BitBuffer()
        bits.append(0b0100, count: 4) // byte mode indicator
        bits.append(bytes.count, count: QRTables.characterCountBits(version: version))
        for byte in bytes { bits.append(Int(byte), count: 8) }

        // Terminator: up to four zero bits, fewer if the symbol is already full.
        let capacityBits = capacity * 8
        bits.append(0, count: min(4, max(0, capacityBits - bits.count)))
        // Then zero bits to a byte boundary.
        bits.append(0, count: (8 - bits.count % 8) % 8)

        var codewords = bits.bytes
        // Alternating pad codewords 11101100 00010001 fill the remaining capacity.
        var pad: UInt8 = 0xEC
        while codewords.count < capacity {
            codewords.append(pad)
            pad = pad == 0xEC ? 0x11 : 0xEC
        }
        if codewords.count > capacity { codewords.removeLast(codewords.count - capacity) }
        return codewords
    }

    /// Splits data into blocks, appends each block's EC codewords, and interleaves: first the
    /// i-th data codeword of every block, then the i-th EC codeword of every block.
    static func interleavedWithErrorCorrection(
        _ data: [UInt8], version: Int, errorCorrection: QRErrorCorrection
    ) -> [UInt8] {
        let blocks = QRTables.blockCount(version: version, errorCorrection: errorCorrection)
        let ecPerBlock = QRTables.ecCodewordsPerBlock(version: version, errorCorrection: errorCorrection)
        let total = QRTables.totalCodewords(version: version)
        guard blocks > 0 else { return data }

        // Group 1 blocks are one data codeword shorter than group 2 blocks; the counts follow
        // from the total, which matches the standard's group table.
        let shortBlockData = total / blocks - ecPerBlock
        let longBlocks = total % blocks
        let shortBlocks = blocks - longBlocks
        let generator = ReedSolomon.generator(degree: ecPerBlock)

        var dataBlocks: [[UInt8]] = []
        var ecBlocks: [[UInt8]] = []
        dataBlocks.reserveCapacity(blocks)
        ecBlocks.reserveCapacity(blocks)
        var offset = 0
        for index in 0..<blocks {
            let length = shortBlockData + (index < shortBlocks ? 0 : 1)
            let end = min(data.count, offset + length)
            let block = offset < end ? Array(data[offset..<end]) : []
            offset = end
            dataBlocks.append(block)
            ecBlocks.append(ReedSolomon.remainder(block, generator: generator))
        }

        var result: [UInt8] = []
        result.reserveCapacity(total)
        for i in 0...shortBlockData { // the last index exists only in long blocks
            for block in dataBlocks where i < block.count { result.append(block[i]) }
        }
        for i in 0..<ecPerBlock {
            for block in ecBlocks where i < block.count { result.append(block[i]) }
        }
        return result
    }
}

/// Bits appended most significant first, read back as bytes (last byte zero-padded).
struct BitBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count bitCount: Int) {
        guard bitCount > 0 else { return }
        for shift in stride(from: bitCount - 1, through: 0, by: -1) {
            let bit = shift < Int.bitWidth ? (value >> shift) & 1 : 0
            if count % 8 == 0 { bytes.append(0) }
            if bit != 0, let last = bytes.indices.last {
                bytes[last] |= UInt8(1 << (7 - count % 8))
            }
            count += 1
        }
    }
}
