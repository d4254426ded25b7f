/// The module grid while a symbol is being built. `isFunction` marks modules that belong to
/// patterns or format/version areas, so data placement and masking leave them alone.
struct QRMatrix: Sendable {
    let version: Int
    let size: Int
    /// Row-major, true = dark.
    var dark: [Bool]
    /// Row-major, true = function module (never carries data, never masked).
    var isFunction: [Bool]

    init(version: Int) {
        self.version = version
        self.size = QRTables.size(version: version)
        dark = [Bool](repeating: false, count: size * size)
        isFunction = [Bool](repeating: false, count: size * size)
    }

    func index(_ x: Int, _ y: Int) -> Int? {
        guard x >= 0, y >= 0, x < size, y < size else { return nil }
        return y * size + x
    }

    func isDark(_ x: Int, _ y: Int) -> Bool {
        guard let i = index(x, y) else { return false }
        return dark[i]
    }

    /// Sets a function module; coordinates off the grid are ignored (finder separators run
    /// past the edge and are simply clipped).
    mutating func setFunction(_ x: Int, _ y: Int, dark value: Bool) {
        guard let i = index(x, y) else { return }
        dark[i] = value
        isFunction[i] = true
    }

    // MARK: Function patterns

    mutating func drawFunctionPatterns() {
        // Timing patterns first: the finders and alignment patterns drawn later overwrite
        // the ends that fall inside them.
        for i in 0..<size {
            setFunction(6, i, dark: i % 2 == 0)
            setFunction(i, 6, dark: i % 2 == 0)
        }
        drawFinder(centerX: 3, centerY: 3)
        drawFinder(centerX: size - 4, centerY: 3)
        drawFinder(centerX: 3, centerY: size - 4)

        let centers = QRTables.alignmentPatternCenters(version: version)
        let last = centers.count - 1
        for (i, cy) in centers.enumerated() {
            for (j, cx) in centers.enumerated() {
                // Skip the three corners occupied by finder patterns.
                let nearFinder = (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0)
                if !nearFinder { drawAlignment(centerX: cx, centerY: cy) }
            }
        }

        // Reserve the format areas now (real bits are drawn per mask) and add the dark module.
        drawFormatBits(errorCorrection: .medium, mask: 0)
        drawVersionBits()
    }

    /// 7x7 finder plus its one-module light separator (a 9x9 square clipped by the edge).
    private mutating func drawFinder(centerX: Int, centerY: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let distance = max(abs(dx), abs(dy))
                // Rings at Chebyshev distance 0-1 and 3 are dark; 2 and 4 (separator) light.
                setFunction(centerX + dx, centerY + dy, dark: distance != 2 && distance != 4)
            }
        }
    }

    /// 5x5 alignment pattern: dark centre, light ring, dark outer ring.
    private mutating func drawAlignment(centerX: Int, centerY: Int) {
        for dy in -2...2 {
            for dx in -2...2 {
                setFunction(centerX + dx, centerY + dy, dark: max(abs(dx), abs(dy)) != 1)
            }
        }
    }

    /// 15-bit format information (§7.9): 2 level bits + 3 mask bits, BCH(15,5) protected,
    /// XOR 0x5412 so it is never all zero. Bit 0 is the least significant.
    static func formatInformation(errorCorrection: QRErrorCorrection, mask: Int) -> Int {
        let data = QRTables.formatBits(errorCorrection) << 3 | (mask & 7)
        let check = bchRemainder(data << 10, generator: 0x537, generatorDegree: 10)
        return (data << 10 | check) ^ 0x5412
    }

    /// 18-bit version information (§7.10): 6 version bits, BCH(18,6) with generator 0x1F25.
    static func versionInformation(version: Int) -> Int {
        let check = bchRemainder(version << 12, generator: 0x1F25, generatorDegree: 12)
        return version << 12 | check
    }

    /// Remainder of binary polynomial long division (the BCH check bits): clear every set bit
    /// from the top down by XORing in the shifted generator.
    private static func bchRemainder(_ value: Int, generator: Int, generatorDegree: Int) -> Int {
        var value = value
        for bit in stride(from: generatorDegree + 7, through: generatorDegree, by: -1)
        where (value >> bit) & 1 != 0 {
            value ^= generator << (bit - generatorDegree)
        }
        return value & ((1 << generatorDegree) - 1)
    }

    mutating func drawFormatBits(errorCorrection: QRErrorCorrection, mask: Int) {
        let bits = Self.formatInformation(errorCorrection: errorCorrection, mask: mask)
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 != 0 }

        // Copy 1, around the top-left finder: down column 8 (skipping the timing row), then
        // leftwards along row 8 (skipping the timing column).
        for i in 0...5 { setFunction(8, i, dark: bit(i)) }
        setFunction(8, 7, dark: bit(6))
        setFunction(8, 8, dark: bit(7))
        setFunction(7, 8, dark: bit(8))
        for i in 9...14 { setFunction(14 - i, 8, dark: bit(i)) }

        // Copy 2, split between the top-right (row 8) and bottom-left (column 8) finders.
        for i in 0...7 { setFunction(size - 1 - i, 8, dark: bit(i)) }
        for i in 8...14 { setFunction(8, size - 15 + i, dark: bit(i)) }

        // The dark module is always dark, next to the bottom-left format copy.
        setFunction(8, size - 8, dark: true)
    }

    /// Two 6x3 / 3x6 blocks next to the top-right and bottom-left finders (version 7+).
    private mutating func drawVersionBits() {
        guard version >= 7 else { return }
        let bits = Self.versionInformation(version: version)
        for i in 0..<18 {
            let value = (bits >> i) & 1 != 0
            let a = size - 11 + i % 3
            let b = i / 3
            setFunction(a, b, dark: value) // top right: 3 columns wide, 6 rows tall
            setFunction(b, a, dark: value) // bottom left: transposed
        }
    }

    // MARK: Data placement

    /// Places codewords (most significant bit first) in the two-module-wide zigzag that runs
    /// up and down from the bottom-right corner (§7.7.3), skipping the vertical timing column
    /// and all function modules. Modules left over stay light (remainder bits are zero).
    mutating func placeCodewords(_ codewords: [UInt8]) {
        let totalBits = codewords.count * 8
        var bitIndex = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 } // column 6 is the timing pattern
            let upward = ((right + 1) & 2) == 0
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for column in 0..<2 {
                    let x = right - column
                    guard let i = index(x, y), !isFunction[i] else { continue }
                    if bitIndex < totalBits {
                        let byte = codewords[bitIndex >> 3]
                        dark[i] = (byte >> (7 - UInt8(bitIndex & 7))) & 1 != 0
                        bitIndex += 1
                    }
                }
            }
            right -= 2
        }
    }
}
