@testable import SecurOTPQR
import Testing

@Suite struct ReedSolomonTests {
    /// "HELLO WORLD" as version 1-M (alphanumeric mode): the standard worked example, whose
    /// 10 EC codewords are published alongside the 16 data codewords.
    @Test func helloWorldVersion1M() {
        let data: [UInt8] = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17]
        let ec = ReedSolomon.errorCorrection(for: data, count: 10)
        #expect(ec == [196, 35, 39, 119, 235, 215, 231, 226, 93, 23])
    }

    /// Derived by hand: for degree 2 the generator is (x - 1)(x - α) = x² + 3x + 2, and a single
    /// data codeword d gives d·x² mod g = 3d·x + 2d (GF(256) products), so d = 1 gives [3, 2].
    @Test func degreeTwoByHand() {
        #expect(ReedSolomon.generator(degree: 2) == [1, 3, 2])
        #expect(ReedSolomon.errorCorrection(for: [1], count: 2) == [3, 2])
        #expect(ReedSolomon.errorCorrection(for: [0x80], count: 2) == [GF256.multiply(0x80, 3), GF256.multiply(0x80, 2)])
        #expect(GF256.multiply(0x80, 2) == 0x1D) // x^8 reduces by 0x11D
    }

    /// Independent property: a valid codeword polynomial vanishes at every generator root α^i.
    @Test(arguments: [7, 10, 17, 22, 26, 30])
    func codewordsHaveZeroSyndromes(degree: Int) {
        var seed: UInt32 = 0x1234_5678 &+ UInt32(degree)
        let data: [UInt8] = (0..<50).map { _ in
            seed = seed &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: seed >> 16)
        }
        let codeword = data + ReedSolomon.errorCorrection(for: data, count: degree)
        for i in 0..<degree {
            let root = GF256.power(i)
            var value: UInt8 = 0 // Horner's rule, highest coefficient first
            for c in codeword { value = GF256.multiply(value, root) ^ c }
            #expect(value == 0, "syndrome \(i) of degree \(degree)")
        }
    }
}

@Suite struct ChecksumTests {
    @Test func crc32KnownValues() {
        #expect(Checksum.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(Checksum.crc32([UInt8]()) == 0)
        #expect(Checksum.crc32(Array("IEND".utf8)) == 0xAE42_6082) // every PNG's last 4 bytes
        let split = Checksum.crc32(Array("56789".utf8), continuing: Checksum.crc32(Array("1234".utf8)))
        #expect(split == 0xCBF4_3926)
    }

    @Test func adler32KnownValues() {
        #expect(Checksum.adler32(Array("Wikipedia".utf8)) == 0x11E6_0398)
        #expect(Checksum.adler32([UInt8]()) == 1)
        // Long input crosses the deferred-modulo boundary: a = 1 + 255n, b = 255n(n+1)/2 + n.
        let n = 20000
        let a = (1 + 255 * n) % 65521
        let b = (255 * n * (n + 1) / 2 + n) % 65521
        #expect(Checksum.adler32([UInt8](repeating: 0xFF, count: n)) == UInt32(b << 16 | a))
    }
}

@Suite struct QRTableTests {
    /// Byte-mode capacities from ISO/IEC 18004 Table 7 (L, M, Q, H).
    static let table7: [Int: [Int]] = [
        1: [17, 14, 11, 7], 2: [32, 26, 20, 14], 3: [53, 42, 32, 24], 4: [78, 62, 46, 34],
        5: [106, 84, 60, 44], 6: [134, 106, 74, 58], 7: [154, 122, 86, 64],
        8: [192, 152, 108, 84], 9: [230, 180, 130, 98], 10: [271, 213, 151, 119],
        40: [2953, 2331, 1663, 1273],
    ]

    @Test func capacitiesMatchStandard() {
        let levels: [QRErrorCorrection] = [.low, .medium, .quartile, .high]
        for (version, expected) in Self.table7 {
            let actual = levels.map { QRTables.byteCapacity(version: version, errorCorrection: $0) }
            #expect(actual == expected, "version \(version)")
        }
    }

    @Test func totalCodewordsMatchStandard() {
        let known = [1: 26, 2: 44, 6: 172, 7: 196, 10: 346, 14: 581, 21: 1156, 32: 2465, 35: 2876, 40: 3706]
        for (version, total) in known {
            #expect(QRTables.totalCodewords(version: version) == total, "version \(version)")
        }
    }

    /// The data module formula must agree with what the matrix actually leaves free.
    @Test func dataModuleFormulaMatchesMatrix() {
        for version in 1...40 {
            var matrix = QRMatrix(version: version)
            matrix.drawFunctionPatterns()
            let free = matrix.isFunction.filter { !$0 }.count
            #expect(free == QRTables.dataModuleCount(version: version), "version \(version)")
        }
    }

    @Test func alignmentCentersAreSane() {
        for version in 2...40 {
            let centers = QRTables.alignmentPatternCenters(version: version)
            #expect(centers.count == version / 7 + 2)
            #expect(centers.first == 6)
            #expect(centers.last == version * 4 + 17 - 7)
            #expect(centers == centers.sorted())
        }
        #expect(QRTables.alignmentPatternCenters(version: 1).isEmpty)
    }

    /// Format strings from the standard's Annex C table, and version strings from Annex D.
    @Test func formatAndVersionInformation() {
        #expect(QRMatrix.formatInformation(errorCorrection: .medium, mask: 0) == 0b101010000010010)
        #expect(QRMatrix.formatInformation(errorCorrection: .low, mask: 0) == 0b111011111000100)
        #expect(QRMatrix.formatInformation(errorCorrection: .quartile, mask: 0) == 0b011010101011111)
        #expect(QRMatrix.formatInformation(errorCorrection: .high, mask: 0) == 0b001011010001001)
        #expect(QRMatrix.formatInformation(errorCorrection: .low, mask: 6) == 0b110110001000001)
        #expect(QRMatrix.formatInformation(errorCorrection: .low, mask: 7) == 0b110100101110110)
        #expect(QRMatrix.versionInformation(version: 7) == 0x07C94)
        #expect(QRMatrix.versionInformation(version: 8) == 0x085BC)
        #expect(QRMatrix.versionInformation(version: 40) == 0x28C69)
    }

    @Test func byteModeBitStream() {
        // "A" in 1-L: 0100 00000001 01000001 0000 then pad bytes EC 11 ...
        let data = QRCodewords.dataCodewords([0x41], version: 1, errorCorrection: .low)
        #expect(data.count == 19)
        #expect(Array(data.prefix(5)) == [0x40, 0x14, 0x10, 0xEC, 0x11])
        // Version 10 switches to a 16-bit count: 0100 + 0000000000000001 + 01000001 ...
        let v10 = QRCodewords.dataCodewords([0x41], version: 10, errorCorrection: .low)
        #expect(Array(v10.prefix(4)) == [0x40, 0x00, 0x14, 0x10])
    }

    @Test func interleavingOrder() {
        // 5-Q: 2 blocks of 15 data codewords then 2 of 16, 18 EC codewords each (134 total).
        let data = (0..<62).map { UInt8($0) }
        let all = QRCodewords.interleavedWithErrorCorrection(data, version: 5, errorCorrection: .quartile)
        #expect(all.count == 134)
        #expect(Array(all.prefix(8)) == [0, 15, 30, 46, 1, 16, 31, 47])
        // After column 14, the short blocks are exhausted: the last two data codewords come
        // from the long blocks only.
        #expect(Array(all[60..<62]) == [45, 61])
        let firstBlockEC = ReedSolomon.errorCorrection(for: Array(data[0..<15]), count: 18)
        #expect(all[62] == firstBlockEC[0])
        #expect(all[66] == firstBlockEC[1])
    }
}

@Suite struct QRCodeTests {
    @Test func tooLongInputThrows() {
        let input = [UInt8](repeating: 0x41, count: 2954)
        #expect(throws: QRError.self) { try QRCode.encode(input, errorCorrection: .low) }
        do {
            _ = try QRCode.encode([UInt8](repeating: 0, count: 1274), errorCorrection: .high)
            Issue.record("1274 bytes at H must not fit")
        } catch {
            #expect(error.message.contains("too long"))
        }
        // The maxima themselves fit, in version 40.
        #expect((try? QRCode.encode([UInt8](repeating: 0x41, count: 2953), errorCorrection: .low))?.version == 40)
        #expect((try? QRCode.encode([UInt8](repeating: 0x41, count: 1273), errorCorrection: .high))?.version == 40)
    }

    @Test func emptyInputEncodes() throws {
        let code = try QRCode.encode([])
        #expect(code.version == 1)
    }

    @Test func smallestVersionIsChosen() throws {
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 14), errorCorrection: .medium).version == 1)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 15), errorCorrection: .medium).version == 2)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 7), errorCorrection: .high).version == 1)
        #expect(try QRCode.encode([UInt8](repeating: 1, count: 8), errorCorrection: .high).version == 2)
    }

    @Test func isDarkNeverTrapsOutOfBounds() throws {
        let code = try QRCode.encode(Array("x".utf8))
        for (x, y) in [(-1, 0), (0, -1), (21, 0), (0, 21), (Int.min, Int.max), (Int.max, Int.max)] {
            #expect(!code.isDark(x: x, y: y))
        }
        // Finder corners are dark, separators light, dark module dark.
        #expect(code.isDark(x: 0, y: 0) && code.isDark(x: 20, y: 0) && code.isDark(x: 0, y: 20))
        #expect(!code.isDark(x: 7, y: 7) && !code.isDark(x: 13, y: 7))
        #expect(code.isDark(x: 8, y: code.size - 8))
    }

    /// The chosen mask must really be the minimum penalty among all eight.
    @Test func chosenMaskHasLowestPenalty() throws {
        let input = Array("otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP".utf8)
        let code = try QRCode.encode(input, errorCorrection: .quartile)
        let data = QRCodewords.dataCodewords(input, version: code.version, errorCorrection: .quartile)
        let all = QRCodewords.interleavedWithErrorCorrection(data, version: code.version, errorCorrection: .quartile)
        var matrix = QRMatrix(version: code.version)
        matrix.drawFunctionPatterns()
        matrix.placeCodewords(all)
        let scores = (0..<8).map { QRMasking.penalty(QRMasking.masked(matrix, pattern: $0, errorCorrection: .quartile)) }
        #expect(scores[code.mask] == scores.min())
        let best = QRMasking.masked(matrix, pattern: code.mask, errorCorrection: .quartile)
        for y in 0..<code.size {
            for x in 0..<code.size { #expect(best.isDark(x, y) == code.isDark(x: x, y: y)) }
        }
    }

    /// Both format-information copies, read at the coordinates of the standard's figure
    /// (bit 14 = most significant), must carry the level and the chosen mask.
    @Test(arguments: [QRErrorCorrection.low, .medium, .quartile, .high])
    func formatInformationCopies(level: QRErrorCorrection) throws {
        let code = try QRCode.encode(Array("format bits".utf8), errorCorrection: level)
        let n = code.size
        // (x, y) from bit 14 down to bit 0.
        let nearTopLeft = [(0, 8), (1, 8), (2, 8), (3, 8), (4, 8), (5, 8), (7, 8), (8, 8),
                           (8, 7), (8, 5), (8, 4), (8, 3), (8, 2), (8, 1), (8, 0)]
        let split = (0..<7).map { (8, n - 1 - $0) } + (0..<8).map { (n - 8 + $0, 8) }
        let expected = QRMatrix.formatInformation(errorCorrection: level, mask: code.mask)
        for copy in [nearTopLeft, split] {
            let value = copy.reduce(0) { $0 << 1 | (code.isDark(x: $1.0, y: $1.1) ? 1 : 0) }
            #expect(value == expected)
        }
    }

    @Test func penaltyRules() {
        // N1: a 7-long run scores 3 + 2; a 4-long run nothing.
        #expect(QRMasking.runPenalty([true, true, true, true, true, true, true, false]) == 5)
        #expect(QRMasking.runPenalty([true, true, true, true, false, false, false, false]) == 0)
        // N3: 1011101 followed by four light modules, preceded by the (light) edge: both sides.
        let finderLike: [Bool] = [true, false, true, true, true, false, true, false, false, false, false]
        #expect(QRMasking.finderLikePenalty(finderLike) == 80)
        let leftOnly: [Bool] = [false, false, false, false] + Array(finderLike.dropLast(4)) + [true]
        #expect(QRMasking.finderLikePenalty(leftOnly) == 40)
    }

    @Test func encodeIsReasonablyFast() throws {
        let uri = "otpauth://totp/Big%20Corp:carol@corp.example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Big%20Corp&algorithm=SHA512&digits=8&period=30&image=https%3A%2F%2Fcorp.example.com%2Flogo.png"
        let input = Array(uri.utf8)
        #expect(input.count >= 200)
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            for _ in 0..<5 { _ = try QRCode.encode(input, errorCorrection: .medium) }
        }
        // Generous bound for unoptimised debug builds; release is far quicker.
        #expect(elapsed < .seconds(5))
    }
}

@Suite struct RendererTests {
    @Test(arguments: [0, 1, 2, 4])
    func terminalLineCount(quietZone: Int) throws {
        for input in ["a", String(repeating: "b", count: 100)] {
            let code = try QRCode.encode(Array(input.utf8))
            for invert in [false, true] {
                let text = code.terminalString(quietZone: quietZone, invert: invert)
                #expect(text.hasSuffix("\n"))
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                #expect(lines.count == (code.size + 2 * quietZone + 1) / 2)
                for line in lines {
                    #expect(line.count == code.size + 2 * quietZone)
                    #expect(line.allSatisfy { "▀▄█ ".contains($0) })
                }
            }
        }
    }

    /// Decodes the half blocks back into modules and compares with the symbol, both polarities.
    @Test func terminalGlyphsMatchModules() throws {
        let code = try QRCode.encode(Array("otpauth://totp/x?secret=AAAA".utf8))
        let quiet = 2
        for invert in [false, true] {
            let lines = code.terminalString(quietZone: quiet, invert: invert).split(separator: "\n")
            for (row, line) in lines.enumerated() {
                for (column, glyph) in line.enumerated() {
                    let top = glyph == "▀" || glyph == "█"
                    let bottom = glyph == "▄" || glyph == "█"
                    let x = column - quiet
                    let yTop = row * 2 - quiet
                    #expect(top == (code.isDark(x: x, y: yTop) != invert))
                    if row * 2 + 1 < code.size + 2 * quiet {
                        #expect(bottom == (code.isDark(x: x, y: yTop + 1) != invert))
                    } else {
                        #expect(!bottom) // below the picture
                    }
                }
            }
        }
        // The quiet zone corner is light: blank normally, full block when inverted.
        #expect(code.terminalString().first == " ")
        #expect(code.terminalString(invert: true).first == "█")
    }

    @Test func pngStructure() throws {
        let code = try QRCode.encode(Array("otpauth://totp/x?secret=JBSWY3DPEHPK3PXP".utf8))
        let png = code.png(scale: 3, quietZone: 4)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let chunks = try PNGReader.chunks(png)
        #expect(chunks.map(\.type) == ["IHDR", "IDAT", "IEND"])
        let ihdr = chunks[0].data
        let side = (code.size + 8) * 3
        #expect(ihdr == PNGReader.be32(side) + PNGReader.be32(side) + [1, 0, 0, 0, 0])
        #expect(chunks[2].data.isEmpty)
        #expect(Array(png.suffix(4)) == [0xAE, 0x42, 0x60, 0x82])
    }

    /// Reads the PNG back with a minimal independent reader and checks every pixel.
    @Test(arguments: [(1, 0), (3, 4), (8, 4)])
    func pngPixelsMatchModules(scale: Int, quietZone: Int) throws {
        let code = try QRCode.encode(Array("pixel check".utf8), errorCorrection: .high)
        let image = try PNGReader.decodeOneBitGray(code.png(scale: scale, quietZone: quietZone))
        let side = (code.size + 2 * quietZone) * scale
        #expect(image.width == side && image.height == side)
        var mismatches = 0
        for y in 0..<side {
            for x in 0..<side {
                let expectedDark = code.isDark(x: x / scale - quietZone, y: y / scale - quietZone)
                if image.white(x, y) == expectedDark { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
    }

    /// A version 40 image at scale 8 needs several stored deflate blocks.
    @Test func pngSplitsLargeImagesIntoStoredBlocks() throws {
        let code = try QRCode.encode([UInt8](repeating: 0x5A, count: 2900), errorCorrection: .low)
        #expect(code.version == 40)
        let image = try PNGReader.decodeOneBitGray(code.png(scale: 8, quietZone: 4))
        #expect(image.storedBlocks > 1)
        #expect(image.width == 185 * 8)
    }

    @Test func pngParametersAreClamped() throws {
        let code = try QRCode.encode([1])
        let tiny = try PNGReader.decodeOneBitGray(code.png(scale: 0, quietZone: -3))
        #expect(tiny.width == code.size)
        let huge = try PNGReader.chunks(code.png(scale: Int.max, quietZone: Int.max))
        #expect(huge.first?.data.prefix(4).elementsEqual(PNGReader.be32((21 + 128) * 64)) == true)
        #expect(code.terminalString(quietZone: -1).split(separator: "\n").count == 11)
    }
}
