/// Data masking (§7.8): each of the eight patterns is tried, scored with the four penalty
/// rules, and the lowest score wins, so the symbol avoids large blobs and finder look-alikes
/// that confuse readers.
enum QRMasking {
    /// Whether mask `pattern` flips the module at column `x`, row `y` (§7.8.2, Table 10).
    static func flips(pattern: Int, x: Int, y: Int) -> Bool {
        switch pattern {
        case 0: (y + x) % 2 == 0
        case 1: y % 2 == 0
        case 2: x % 3 == 0
        case 3: (y + x) % 3 == 0
        case 4: (y / 2 + x / 3) % 2 == 0
        case 5: (y * x) % 2 + (y * x) % 3 == 0
        case 6: ((y * x) % 2 + (y * x) % 3) % 2 == 0
        case 7: ((y + x) % 2 + (y * x) % 3) % 2 == 0
        default: false
        }
    }

    /// Copy of `matrix` with data mask `pattern` applied and matching format bits drawn.
    static func masked(_ matrix: QRMatrix, pattern: Int, errorCorrection: QRErrorCorrection) -> QRMatrix {
        var result = matrix
        let size = matrix.size
        for y in 0..<size {
            for x in 0..<size {
                let i = y * size + x
                if !result.isFunction[i] && flips(pattern: pattern, x: x, y: y) {
                    result.dark[i].toggle()
                }
            }
        }
        result.drawFormatBits(errorCorrection: errorCorrection, mask: pattern)
        return result
    }

    static func applyBestMask(
        to matrix: QRMatrix, errorCorrection: QRErrorCorrection
    ) -> (matrix: QRMatrix, mask: Int) {
        var best = masked(matrix, pattern: 0, errorCorrection: errorCorrection)
        var bestMask = 0
        var bestScore = penalty(best)
        for pattern in 1..<8 {
            let candidate = masked(matrix, pattern: pattern, errorCorrection: errorCorrection)
            let score = penalty(candidate)
            // Strictly lower, so ties keep the lower-numbered mask (deterministic output).
            if score < bestScore {
                best = candidate
                bestMask = pattern
                bestScore = score
            }
        }
        return (best, bestMask)
    }

    // MARK: Penalty rules (§7.8.3)

    static let runWeight = 3       // N1: run of 5+ same-colour modules, plus 1 per extra
    static let blockWeight = 3     // N2: each 2x2 block of one colour
    static let finderWeight = 40   // N3: 1:1:3:1:1 finder-like pattern with 4 light modules
    static let balanceWeight = 10  // N4: per 5 % the dark share strays from 50 %

    static func penalty(_ matrix: QRMatrix) -> Int {
        let size = matrix.size
        let dark = matrix.dark
        guard size > 0, dark.count == size * size else { return Int.max }

        var score = 0
        // Rows and columns through one code path: `line` gathers the modules of either.
        var line = [Bool](repeating: false, count: size)
        for horizontal in [true, false] {
            for a in 0..<size {
                for b in 0..<size {
                    line[b] = horizontal ? dark[a * size + b] : dark[b * size + a]
                }
                score += runPenalty(line) + finderLikePenalty(line)
            }
        }

        // N2: count every (overlapping) 2x2 block of a single colour.
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let i = y * size + x
                let c = dark[i]
                if dark[i + 1] == c && dark[i + size] == c && dark[i + size + 1] == c {
                    score += blockWeight
                }
            }
        }

        // N4: 0-5 % off balance costs nothing, 5-10 % costs 10, and so on.
        let darkCount = dark.reduce(0) { $0 + ($1 ? 1 : 0) }
        let total = size * size
        let deviation = abs(darkCount * 100 - total * 50) // percent deviation × total
        score += deviation / (total * 5) * balanceWeight
        return score
    }

    /// N1 for one row or column.
    static func runPenalty(_ line: [Bool]) -> Int {
        var score = 0
        var runColor = false
        var runLength = 0
        for (index, module) in line.enumerated() {
            if index > 0 && module == runColor {
                runLength += 1
            } else {
                if runLength >= 5 { score += runWeight + runLength - 5 }
                runColor = module
                runLength = 1
            }
        }
        if runLength >= 5 { score += runWeight + runLength - 5 }
        return score
    }

    /// N3 for one row or column: dark-light-dark(3)-light-dark with four light modules on
    /// either side. The quiet zone counts as light, so patterns at the edge are found too;
    /// each side that qualifies is one occurrence.
    static func finderLikePenalty(_ line: [Bool]) -> Int {
        let count = line.count
        guard count >= 7 else { return 0 }
        func isDark(_ i: Int) -> Bool { i >= 0 && i < count ? line[i] : false }
        func lightRun(from start: Int) -> Bool {
            for i in start..<(start + 4) where isDark(i) { return false }
            return true
        }
        var score = 0
        for p in 0...(count - 7) {
            guard line[p], !line[p + 1], line[p + 2], line[p + 3], line[p + 4], !line[p + 5], line[p + 6]
            else { continue }
            if lightRun(from: p - 4) { score += finderWeight }
            if lightRun(from: p + 7) { score += finderWeight }
        }
        return score
    }
}
