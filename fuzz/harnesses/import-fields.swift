// The small field parsers inside the importers, each against an independent oracle.
//
// Input: the first byte picks the parser; the rest is its text.
//   0: PSKC xs:dateTime (PSKCDateTime) — the time it gives, printed by PSKCDateTime.format,
//      is the same second for glibc's timegm, and reads back as the same time.
//   1: .sdtid integers (SecurIDSDTID.integer) — agree with glibc's strtol(base 0), whole text.
//   2: .sdtid dates YYYY/MM/DD (SecurIDSDTID.date) — agree with timegm; and the importers'
//      day printer (SecurIDImport.dateText) inverts SecurIDParameters.day.
//   3: base64 — the PSKC/migration decoder (TokenImporter.Base64) and the SecurID one
//      (SecurIDText.base64Decoded) agree; URL-safe input equals its standard spelling;
//      what they decode re-encodes (encoder written here) to text they decode the same.
import FuzzSupport
import Glibc
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzImportFields(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(Fuzz.bytes(data, size))
    let mode = input.byte() % 4
    let text = input.rest()
    switch mode {
    case 0: checkDateTime(text)
    case 1: checkInteger(text)
    case 2: checkSDTIDDate(text)
    default: checkBase64(text)
    }
    return 0
}

// MARK: - PSKC xs:dateTime

private func checkDateTime(_ text: [UInt8]) {
    if let time = PSKCDateTime.unixTime(String(decoding: text, as: UTF8.self)) { checkFormat(time) }
    // Also any second from year 1 to 9999, taken from the input's first eight bytes.
    guard text.count >= 8 else { return }
    let raw = text.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    let first: Int64 = -62_135_596_800, last: Int64 = 253_402_300_799
    checkFormat(first + Int64(raw % UInt64(last - first + 1)))
}

private func checkFormat(_ time: Int64) {
    let shown = PSKCDateTime.format(time) // "YYYY-MM-DD hh:mm:ss UTC"
    let numbers = shown.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
    guard numbers.count == 6, (1...9999).contains(numbers[0]) else { return } // no xs:dateTime beyond
    var fields = tm()
    fields.tm_year = Int32(numbers[0] - 1900)
    fields.tm_mon = Int32(numbers[1] - 1)
    fields.tm_mday = Int32(numbers[2])
    fields.tm_hour = Int32(numbers[3])
    fields.tm_min = Int32(numbers[4])
    fields.tm_sec = Int32(numbers[5])
    Fuzz.require(Int64(timegm(&fields)) == time, "\(time) is shown as \(shown)")
    let parts = shown.split(separator: " ")
    let year = String(numbers[0]), pad = String(repeating: "0", count: max(0, 4 - year.count)) // "1-01-01" → "0001-01-01"
    Fuzz.require(PSKCDateTime.unixTime(pad + parts[0] + "T" + parts[1] + "Z") == time, "\(shown) does not read back as \(time)")
}

// MARK: - .sdtid integers and dates

private func checkInteger(_ text: [UInt8]) {
    let ours = SecurIDSDTID.integer(text)
    var oracle: Int?
    if !text.isEmpty, !text.contains(0), !SecurIDText.isSpace(text[0]) {
        let copy = text.map { CChar(bitPattern: $0) } + [0]
        copy.withUnsafeBufferPointer { buffer in
            guard let start = buffer.baseAddress else { return }
            var end: UnsafeMutablePointer<CChar>?
            errno = 0
            let value = strtol(start, &end, 0)
            let consumed = end.map { UnsafePointer($0) - start } ?? 0
            if errno == 0, consumed == text.count, value.magnitude <= UInt(Int32.max) { oracle = value }
        }
    }
    Fuzz.require(ours == oracle, "integer(\"\(String(decoding: text, as: UTF8.self))\") = \(ours.map(String.init) ?? "nil"), strtol: \(oracle.map(String.init) ?? "nil")")
}

private func checkSDTIDDate(_ text: [UInt8]) {
    let ours = SecurIDSDTID.date(text)
    var oracle: Int?
    let parts = text.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    if parts.count == 3, parts.allSatisfy({ (1...4).contains($0.count) && $0.allSatisfy { (0x30...0x39).contains($0) } }) {
        let n = parts.map { $0.reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        var fields = tm()
        fields.tm_year = Int32(n[0] - 1900)
        fields.tm_mon = Int32(n[1] - 1)
        fields.tm_mday = Int32(n[2])
        let time = timegm(&fields)
        // timegm normalises 2023/02/30 to March: only dates it leaves alone exist.
        if (1...9999).contains(n[0]), fields.tm_year == Int32(n[0] - 1900), fields.tm_mon == Int32(n[1] - 1), fields.tm_mday == Int32(n[2]) {
            oracle = Int((Int64(time) - 946_684_800) / 86_400)
        }
    }
    Fuzz.require(ours == oracle, "date(\"\(String(decoding: text, as: UTF8.self))\") = \(ours.map(String.init) ?? "nil"), timegm: \(oracle.map(String.init) ?? "nil")")
    // dateText(day:) prints a day of 2000...9999 that SecurIDParameters.day counts back.
    guard text.count >= 3 else { return }
    let day = (Int(text[0]) << 16 | Int(text[1]) << 8 | Int(text[2])) % 2_921_940 // 2000-01-01 ... 9999-12-31
    let shown = SecurIDImport.dateText(day: day)
    let numbers = shown.split(separator: "-").compactMap { Int($0) }
    Fuzz.require(numbers.count == 3 && SecurIDParameters.day(year: numbers[0], month: numbers[1], day: numbers[2]) == day,
                 "day \(day) is shown as \(shown)")
}

// MARK: - base64

private func checkBase64(_ text: [UInt8]) {
    let importer = TokenImporter.Base64.decode(text)
    let secretDecoded = TokenImporter.Base64.decodeSecret(text).map { secret in secret.withUnsafeBytes { Array($0) } }
    Fuzz.require(importer == secretDecoded, "decode and decodeSecret differ on \(Fuzz.hex(text))")
    // SecurIDText also skips vertical tab and form feed; compare where both see the same text.
    if !text.contains(0x0B), !text.contains(0x0C) {
        let securID = SecurIDText.base64Decoded(text)
        Fuzz.require(importer == securID, "base64 decoders differ on \"\(String(decoding: text, as: UTF8.self))\": "
                     + "\(importer.map(Fuzz.hex) ?? "nil") vs \(securID.map(Fuzz.hex) ?? "nil")")
    }
    let standard = text.map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0 }
    if !text.contains(UInt8(ascii: "+")), !text.contains(UInt8(ascii: "/")) {
        Fuzz.require(TokenImporter.Base64.decode(text, urlSafe: true) == TokenImporter.Base64.decode(standard),
                     "URL-safe base64 differs from its standard spelling: \(String(decoding: text, as: UTF8.self))")
    }
    if let decoded = importer {
        let again = Array(Base64Encoder.encode(decoded).utf8)
        Fuzz.require(TokenImporter.Base64.decode(again) == decoded && SecurIDText.base64Decoded(again) == decoded,
                     "re-encoded \(Fuzz.hex(decoded)) decodes differently")
    }
}
