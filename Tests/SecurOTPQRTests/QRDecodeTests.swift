@testable import SecurOTPQR
import Testing

/// Round trips through zbarimg. These fail (not skip) when zbarimg is missing.
@Suite struct QRDecodeTests {
    static let levels: [QRErrorCorrection] = [.low, .medium, .quartile, .high]

    static let uris = [
        "otpauth://totp/ACME%20Co:alice@example.com?secret=JBSWY3DPEHPK3PXP&issuer=ACME%20Co&algorithm=SHA256&digits=8&period=60",
        "otpauth://totp/alice?secret=JBSWY3DPEHPK3PXP",
        "otpauth://hotp/Example:bob@example.org?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Example&counter=0",
        "otpauth://totp/Big%20Corp%20Intl:carol.long-name@subdomain.corp.example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Big%20Corp%20Intl&algorithm=SHA512&digits=8&period=30",
    ]

    @Test(arguments: uris, levels)
    func otpauthURIs(uri: String, level: QRErrorCorrection) throws {
        try Zbar.roundTrip(Array(uri.utf8), level, scale: 8)
    }

    @Test(arguments: levels)
    func singleByte(level: QRErrorCorrection) throws {
        let code = try Zbar.roundTrip(Array("7".utf8), level)
        #expect(code.version == 1)
        #expect(code.size == 21)
    }

    /// 330 bytes: version 10+ even at level L (L v9 holds 230 bytes), two-byte length field.
    @Test(arguments: levels)
    func longURIReachesVersion10(level: QRErrorCorrection) throws {
        let secret = String(repeating: "JBSWY3DPEHPK3PXP", count: 13)
        let uri = "otpauth://totp/ACME%20Co:alice@example.com?secret=\(secret)&issuer=ACME%20Co&algorithm=SHA256&digits=8&period=60"
        #expect(uri.utf8.count > 300)
        let code = try Zbar.roundTrip(Array(uri.utf8), level)
        #expect(code.version >= 10)
    }

    /// Version information blocks appear from version 7; 152 bytes is just past v6-L (134) and
    /// within v7-L (154).
    @Test func versionInformationArea() throws {
        let text = String(repeating: "otpauth-", count: 19)
        let code = try Zbar.roundTrip(Array(text.utf8), .low)
        #expect(code.version == 7)
    }

    /// Exactly-full symbols at every version and level: the largest input each holds must land
    /// in that version and decode. This exercises every row of the block tables and every
    /// alignment pattern layout.
    @Test(arguments: levels)
    func everyVersionAtCapacity(level: QRErrorCorrection) throws {
        var failures: [String] = []
        var previousCapacity = 0
        for version in 1...40 {
            let capacity = Self.capacity(version: version, level: level)
            #expect(capacity > previousCapacity)
            previousCapacity = capacity
            // Printable, varied bytes so zbar's text handling stays out of the way.
            let input = (0..<capacity).map { UInt8(ascii: "A") + UInt8(($0 * 7 + version) % 26) }
            let code = try QRCode.encode(input, errorCorrection: level)
            #expect(code.version == version)
            #expect(code.size == version * 4 + 17)
            do {
                let decoded = try Zbar.decode(png: code.png(scale: 3, quietZone: 4))
                if decoded != input { failures.append("v\(version): wrong payload") }
            } catch let error as Zbar.Failure where !error.description.contains("not found") {
                failures.append("v\(version): \(error.description)")
            }
        }
        #expect(failures.isEmpty, "\(level): \(failures)")
    }

    /// Largest byte count `version` holds at `level`, as the encoder's tables say (checked
    /// against the standard's Table 7 in QRUnitTests).
    static func capacity(version: Int, level: QRErrorCorrection) -> Int {
        QRTables.byteCapacity(version: version, errorCorrection: level)
    }
}
