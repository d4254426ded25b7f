/// Error-correction level (ISO/IEC 18004 §6.5.1): roughly 7 %, 15 %, 25 % and 30 % of the
/// codewords can be restored. Higher levels survive more damage but hold less data.
public enum QRErrorCorrection: Sendable {
    case low, medium, quartile, high
}

/// Why a symbol could not be built (today only: the data does not fit in version 40).
public struct QRError: Error, Equatable, Sendable {
    public let message: String

    init(_ message: String) { self.message = message }
}

/// A finished QR code symbol: a square of dark and light modules, quiet zone not included.
public struct QRCode: Sendable {
    /// Modules per side, 21 (version 1) through 177 (version 40).
    public let size: Int
    /// Symbol version, 1...40.
    public let version: Int
    /// The level the symbol was built with (kept for tests and diagnostics).
    let errorCorrection: QRErrorCorrection
    /// The data mask (0...7) that scored the lowest penalty.
    let mask: Int
    /// Row-major, `size * size` entries, true = dark.
    private let modules: [Bool]

    init(version: Int, errorCorrection: QRErrorCorrection, mask: Int, modules: [Bool]) {
        self.version = version
        self.size = QRTables.size(version: version)
        self.errorCorrection = errorCorrection
        self.mask = mask
        self.modules = modules
    }

    /// Dark module at column `x`, row `y` (origin top left). Anything outside the symbol is
    /// light, which is also what the quiet zone is, so renderers need no bounds logic.
    public func isDark(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        let index = y * size + x
        return index < modules.count ? modules[index] : false
    }

    /// Encodes `bytes` in byte mode in the smallest version (1...40) that fits at the requested
    /// error-correction level, choosing the data mask with the lowest penalty score.
    public static func encode(
        _ bytes: [UInt8], errorCorrection: QRErrorCorrection = .medium
    ) throws(QRError) -> QRCode {
        guard let version = QRTables.smallestVersion(byteCount: bytes.count, errorCorrection: errorCorrection) else {
            let maximum = QRTables.byteCapacity(version: QRTables.maxVersion, errorCorrection: errorCorrection)
            throw QRError("data too long for a QR code: \(bytes.count) bytes, at most \(maximum) fit at this error-correction level")
        }
        let data = QRCodewords.dataCodewords(bytes, version: version, errorCorrection: errorCorrection)
        let codewords = QRCodewords.interleavedWithErrorCorrection(data, version: version, errorCorrection: errorCorrection)

        var matrix = QRMatrix(version: version)
        matrix.drawFunctionPatterns()
        matrix.placeCodewords(codewords)
        let (masked, mask) = QRMasking.applyBestMask(to: matrix, errorCorrection: errorCorrection)
        return QRCode(version: version, errorCorrection: errorCorrection, mask: mask, modules: masked.dark)
    }
}
