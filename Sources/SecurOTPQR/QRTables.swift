/// Constants from ISO/IEC 18004: block structure (Table 9), alignment pattern centres
/// (Annex E) and the derived capacities. Everything else (group sizes, total codewords) is
/// computed so the tables stay small enough to check by eye.
enum QRTables {
    static let minVersion = 1
    static let maxVersion = 40

    static func size(version: Int) -> Int { version * 4 + 17 }

    /// Row index into the per-level tables below.
    static func levelIndex(_ level: QRErrorCorrection) -> Int {
        switch level {
        case .low: 0
        case .medium: 1
        case .quartile: 2
        case .high: 3
        }
    }

    /// The two format-information bits for the level (§7.9.1): note M is 00, not 01.
    static func formatBits(_ level: QRErrorCorrection) -> Int {
        switch level {
        case .low: 0b01
        case .medium: 0b00
        case .quartile: 0b11
        case .high: 0b10
        }
    }

    /// Error-correction codewords per block, [level][version - 1]. Every block of one symbol
    /// has the same number of EC codewords; only the data part differs by one between groups.
    private static let ecCodewordsPerBlock: [[Int]] = [
        // 1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  18  19  20
        [7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28,
         28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],  // L
        [10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26,
         26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],  // M
        [13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30,
         28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],  // Q
        [17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28,
         30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],  // H
    ]

    /// Number of Reed–Solomon blocks (both groups together), [level][version - 1].
    private static let blockCounts: [[Int]] = [
        // 1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  18  19  20
        [1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8,
         8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],  // L
        [1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16,
         17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],  // M
        [1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20,
         23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],  // Q
        [1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25,
         25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],  // H
    ]

    /// Alignment pattern centre coordinates per version (Annex E, Table E.1); the patterns sit
    /// at every (row, column) pair except the three that collide with finder patterns.
    private static let alignmentCenters: [[Int]] = [
        [],
        [6, 18], [6, 22], [6, 26], [6, 30], [6, 34],
        [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50], [6, 30, 54], [6, 32, 58], [6, 34, 62],
        [6, 26, 46, 66], [6, 26, 48, 70], [6, 26, 50, 74], [6, 30, 54, 78], [6, 30, 56, 82],
        [6, 30, 58, 86], [6, 34, 62, 90],
        [6, 28, 50, 72, 94], [6, 26, 50, 74, 98], [6, 30, 54, 78, 102], [6, 28, 54, 80, 106],
        [6, 32, 58, 84, 110], [6, 30, 58, 86, 114], [6, 34, 62, 90, 118],
        [6, 26, 50, 74, 98, 122], [6, 30, 54, 78, 102, 126], [6, 26, 52, 78, 104, 130],
        [6, 30, 56, 82, 108, 134], [6, 34, 60, 86, 112, 138], [6, 30, 58, 86, 114, 142],
        [6, 34, 62, 90, 118, 146],
        [6, 30, 54, 78, 102, 126, 150], [6, 24, 50, 76, 102, 128, 154], [6, 28, 54, 80, 106, 132, 158],
        [6, 32, 58, 84, 110, 136, 162], [6, 26, 54, 82, 110, 138, 166], [6, 30, 58, 86, 114, 142, 170],
    ]

    static func alignmentPatternCenters(version: Int) -> [Int] {
        guard (minVersion...maxVersion).contains(version) else { return [] }
        return alignmentCenters[version - 1]
    }

    static func ecCodewordsPerBlock(version: Int, errorCorrection: QRErrorCorrection) -> Int {
        guard (minVersion...maxVersion).contains(version) else { return 0 }
        return ecCodewordsPerBlock[levelIndex(errorCorrection)][version - 1]
    }

    static func blockCount(version: Int, errorCorrection: QRErrorCorrection) -> Int {
        guard (minVersion...maxVersion).contains(version) else { return 1 }
        return blockCounts[levelIndex(errorCorrection)][version - 1]
    }

    /// Modules left for codewords once every function pattern and the format/version areas are
    /// taken. Computed rather than tabulated; a test checks it against a real matrix.
    static func dataModuleCount(version: Int) -> Int {
        let size = size(version: version)
        var count = size * size
        count -= 3 * 64          // three finders with their separators (8 x 8 each)
        count -= 2 * 15 + 1      // two copies of format information plus the dark module
        count -= 2 * (size - 16) // timing patterns between the separators
        let centers = alignmentPatternCenters(version: version).count
        if centers > 0 {
            count -= 25 * (centers * centers - 3)
            count += 2 * 5 * (centers - 2) // alignment patterns that overlap a timing line
        }
        if version >= 7 { count -= 2 * 18 } // two copies of version information
        return count
    }

    /// All codewords (data + EC); leftover modules (0...7) become remainder bits.
    static func totalCodewords(version: Int) -> Int { dataModuleCount(version: version) / 8 }

    static func dataCodewords(version: Int, errorCorrection: QRErrorCorrection) -> Int {
        totalCodewords(version: version)
            - ecCodewordsPerBlock(version: version, errorCorrection: errorCorrection)
            * blockCount(version: version, errorCorrection: errorCorrection)
    }

    /// Width of the byte-mode character count indicator (Table 3).
    static func characterCountBits(version: Int) -> Int { version <= 9 ? 8 : 16 }

    /// Most bytes that byte mode can carry in this version and level.
    static func byteCapacity(version: Int, errorCorrection: QRErrorCorrection) -> Int {
        let bits = dataCodewords(version: version, errorCorrection: errorCorrection) * 8
        let available = bits - 4 - characterCountBits(version: version)
        return max(0, available / 8)
    }

    static func smallestVersion(byteCount: Int, errorCorrection: QRErrorCorrection) -> Int? {
        guard byteCount >= 0 else { return nil }
        for version in minVersion...maxVersion
        where byteCount <= byteCapacity(version: version, errorCorrection: errorCorrection) {
            return version
        }
        return nil
    }
}
