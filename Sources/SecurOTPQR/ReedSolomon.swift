/// Arithmetic in GF(2^8) with the QR reducing polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D)
/// and generator element α = 2. Log/antilog tables turn multiplication into an addition.
enum GF256 {
    /// exp[i] = α^i for i in 0..<255.
    static let exp: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 255)
        var value = 1
        for i in 0..<255 {
            table[i] = UInt8(value)
            value <<= 1
            if value & 0x100 != 0 { value ^= 0x11D }
        }
        return table
    }()

    /// log[v] = i such that α^i = v; log[0] is unused (zero has no logarithm).
    static let log: [Int] = {
        var table = [Int](repeating: 0, count: 256)
        for (i, value) in exp.enumerated() { table[Int(value)] = i }
        return table
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        if a == 0 || b == 0 { return 0 }
        // Both logs are < 255, so the sum mod 255 is always a valid index.
        return exp[(log[Int(a)] + log[Int(b)]) % 255]
    }

    /// α^power for any non-negative power.
    static func power(_ power: Int) -> UInt8 { exp[((power % 255) + 255) % 255] }
}

/// Reed–Solomon error-correction codewords as QR uses them (§7.5.2): the EC codewords are the
/// remainder of data(x) · x^n divided by the generator ∏_{i=0}^{n-1} (x − α^i).
enum ReedSolomon {
    /// Generator coefficients, highest degree first, leading 1 included (count = degree + 1).
    static func generator(degree: Int) -> [UInt8] {
        var poly: [UInt8] = [1]
        guard degree > 0 else { return poly }
        for i in 0..<degree {
            // Multiply by (x + α^i); subtraction is XOR in characteristic 2.
            let root = GF256.power(i)
            var next = [UInt8](repeating: 0, count: poly.count + 1)
            for (j, coefficient) in poly.enumerated() {
                next[j] ^= coefficient
                next[j + 1] ^= GF256.multiply(coefficient, root)
            }
            poly = next
        }
        return poly
    }

    /// The `generator.count - 1` EC codewords for `data` (a shift-register division).
    static func remainder(_ data: [UInt8], generator: [UInt8]) -> [UInt8] {
        let degree = generator.count - 1
        guard degree > 0 else { return [] }
        var remainder = [UInt8](repeating: 0, count: degree)
        for byte in data {
            let factor = byte ^ remainder[0]
            // Shift left by one coefficient, then subtract factor · generator (monic term dropped).
            for j in 0..<(degree - 1) { remainder[j] = remainder[j + 1] }
            remainder[degree - 1] = 0
            if factor == 0 { continue }
            for j in 0..<degree {
                remainder[j] ^= GF256.multiply(generator[j + 1], factor)
            }
        }
        return remainder
    }

    static func errorCorrection(for data: [UInt8], count: Int) -> [UInt8] {
        remainder(data, generator: generator(degree: count))
    }
}
