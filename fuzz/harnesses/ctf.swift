// RSA SecurID CTF strings (SecurIDCTF in SecurOTPImport): numeric v1/v2 strings, base64
// v3/v4 strings, and the smartphone URLs around both.
//
// Input: the first byte picks the mode.
//   0: raw — the second byte picks a password (bits 0–1, 3: none) and a device ID (bits 2–4,
//      4 and up: none) of the test vectors (Tests/Vectors/securid.json); the rest is the string.
//   1: numeric — the harness builds a v1/v2 string from the input's serial, seed, flags and
//      expiry, with right checksums for the password and device ID it picks.
//   2: base64 — the harness builds a v3/v4 string around a 176-byte payload from the input,
//      with right hashes, HMAC and encryption (so the fuzzer explores the payload, which no
//      mutation of an existing string reaches).
// Properties: every token is usable (a 12-digit serial, a 16-byte seed, valid parameters, not
// expired); a string the harness built is imported with the seed, serial and settings it was
// built from, or refused only for what its payload says (not 128-bit, expired, bad serial or
// digit count) — never for its password, device ID or checksums.
import COpenSSLImport
import FuzzSupport
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

private let now: Int64 = 1_700_000_000
private let passwords = ["asdf1234", "Correct horse", "Tr0ub4dor&3"].map { Array($0.utf8) }
private let devices = ["a01c4380-fc01-4df0-b113-7fb98ec74694", "1234-5678-9012-3456", "ABCD-1234-efgh-5678",
                       "d82c-467c-56fb-2058-edf8-add6"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCTF(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(Fuzz.bytes(data, size))
    switch input.byte() % 3 {
    case 0: raw(&input)
    case 1: numeric(&input)
    default: base64(&input)
    }
    return 0
}

private func raw(_ input: inout FuzzInput) {
    let choice = Int(input.byte())
    let device = choice >> 2 & 7
    let options = ImportOptions(password: choice & 3 == 3 ? nil : passwords[choice & 3],
                                bindingID: device < devices.count ? devices[device] : nil, now: now)
    let text = String(decoding: input.rest(), as: UTF8.self)
    if let token = try? SecurIDCTF.decode(text, options: options) { check(token) }
}

private func check(_ token: ImportedToken) {
    guard case .securID(let parameters) = token.kind else { return Fuzz.require(false, "a CTF token that is not SecurID") }
    Fuzz.require(parameters.problem == nil, "parameters: \(parameters.problem ?? "")")
    Fuzz.require(token.secret.count == 16, "seed of \(token.secret.count) bytes")
    Fuzz.require(token.serial.map { $0.utf8.count == 12 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } } == true,
                 "serial \(token.serial ?? "nil")")
    Fuzz.require(!parameters.isExpired(at: now) && token.expires == parameters.expiresAt, "expired token imported")
    Fuzz.require(token.pinMode == (parameters.addsPIN ? .addedByToken : .prefix), "PIN mode \(token.pinMode)")
    Fuzz.require(token.source == "ctf", "source \(token.source)")
}

private func seedOf(_ token: ImportedToken) -> [UInt8] { token.secret.withUnsafeBytes { Array($0) } }

// MARK: - numeric v1/v2

private func numeric(_ input: inout FuzzInput) {
    let version: UInt8 = input.bool() ? 2 : 1
    let serial = (0..<12).map { _ in UInt8(ascii: "0") + input.byte() % 10 }
    let seed = input.bytes(16)
    let flags = input.uint16()
    let expirationDay = Int(input.uint16() & 0x3FFF)
    let password = passwords[input.int(in: 0...2)]
    let device = devices[input.int(in: 0...3)]
    let url = input.int(in: 0...3) // 0: no URL, else one of the three smartphone prefixes
    let extraDigits = input.int(in: 0...4)
    let style = input.byte()
    let givesUnusedPassword = input.bool(), givesUnusedDevice = input.bool()

    let locked = flags & SecurIDParameters.flagPassword != 0
    let bound = flags & SecurIDParameters.flagDeviceID != 0
    let fieldLength = url > 0 ? 40 : 32
    let deviceID = bound ? SecurIDCTF.filteredDeviceID(Array(device.utf8), version: version, fieldLength: fieldLength) : []
    let key = SecurIDCrypto.sidHash((locked ? password : []) + deviceID + SecurIDCTF.seedKeyMagic)
    let encrypted = SecurIDCrypto.encryptBlock(key: key, seed)
    let deviceCheck = bound ? SecurIDCrypto.short15(deviceID + [UInt8](repeating: 0, count: fieldLength - deviceID.count))
                            : input.uint16() & 0x7FFF

    var bits: [UInt8] = []
    func put(_ value: UInt64, _ count: Int) { for shift in stride(from: count - 1, through: 0, by: -1) { bits.append(UInt8(value >> UInt64(shift) & 1)) } }
    for byte in encrypted { put(UInt64(byte), 8) }
    put(UInt64(flags), 16)
    put(UInt64(expirationDay), 14)
    put(UInt64(input.byte() & 1), 1)
    put(UInt64(SecurIDCrypto.short15(seed)), 15)
    put(UInt64(deviceCheck), 15)
    // Three bits a digit; the reader masks with 7, so 8 and 9 may stand for 0 and 1.
    func digits(_ bits: [UInt8]) -> [UInt8] {
        stride(from: 0, to: bits.count, by: 3).enumerated().map { index, start in
            let value = bits[start] << 2 | bits[start + 1] << 1 | bits[start + 2]
            return UInt8(ascii: "0") + (value < 2 && style >> (index % 8) & 1 == 1 ? value + 8 : value)
        }
    }
    var body = [UInt8(ascii: "0") + version] + serial + digits(bits)
    for _ in 0..<extraDigits { body.append(UInt8(ascii: "0") + input.byte() % 10) }
    bits = []
    put(UInt64(SecurIDCrypto.short15(body)), 15)
    let all = body + digits(bits)
    var text = String(decoding: style & 0x80 != 0 ? grouped(all) : all, as: UTF8.self)
    if url > 0 { text = SecurIDCTF.urlPrefixes[url - 1] + "ctfData=" + text }

    let options = ImportOptions(password: locked || givesUnusedPassword ? password : nil,
                                bindingID: bound || givesUnusedDevice ? device : nil, now: now)
    let parameters = SecurIDParameters(flagsWord: flags, expirationDay: expirationDay)
    switch Result(catching: { () throws(ImportError) in try SecurIDCTF.decode(text, options: options) }) {
    case .success(let token):
        check(token)
        Fuzz.require(flags & SecurIDParameters.flag128Bit != 0, "64-bit token imported from \(text)")
        Fuzz.require(seedOf(token) == seed && token.serial == String(decoding: serial, as: UTF8.self),
                     "\(text) imported another seed or serial")
        guard case .securID(let got) = token.kind else { return }
        Fuzz.require(got.flags == flags && got.digits == parameters.digits && got.interval == parameters.interval
                     && got.expirationDay == expirationDay, "\(text) imported other settings")
    case .failure(let error):
        let expected: ImportError.Code = flags & SecurIDParameters.flag128Bit == 0 ? .unsupported : .expired
        Fuzz.require(error.code == expected && (expected == .unsupported || parameters.isExpired(at: now)),
                     "built string \(text) refused: \(error.code): \(error.message)")
    }
}

/// stoken's --blocks layout: dashes between groups of five.
private func grouped(_ digits: [UInt8]) -> [UInt8] {
    digits.enumerated().flatMap { index, digit in index > 0 && index % 5 == 0 ? [UInt8(ascii: "-"), digit] : [digit] }
}

// MARK: - base64 v3/v4

private func base64(_ input: inout FuzzInput) {
    let version: UInt8 = input.bool() ? 3 : 4
    let passwordLocked = input.bool(), deviceLocked = input.bool()
    let password = passwords[input.int(in: 0...2)]
    let binding = devices[input.int(in: 0...3)]
    let style = input.byte()
    let nonce = input.bytes(16)
    var plain = input.bytes(176)
    if style & 1 != 0 { // mostly a well-formed serial and digit count, to get past them
        for index in 0..<12 { plain[index] = UInt8(ascii: "0") + plain[index] % 10 }
        for index in 12..<16 { plain[index] = 0 }
        plain[35] = 1 + plain[35] % 8
    }

    var device = [UInt8](repeating: 0, count: 48)
    if deviceLocked {
        let kept = binding.utf8.filter { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        for (index, byte) in kept.prefix(48).enumerated() { device[index] = byte >= 0x61 ? byte - 0x20 : byte }
    }
    let secret = passwordLocked ? password : []
    guard let macKey = try? SecurIDCTF.deriveKey(version: version, password: secret, device: device,
                                                 constant: SecurIDCTF.macConstant, nonce: nonce),
          let encryptionKey = try? SecurIDCTF.deriveKey(version: version, password: secret, device: device,
                                                        constant: SecurIDCTF.encryptionConstant, nonce: nonce)
    else { return Fuzz.require(false, "key derivation failed") }
    var ciphertext = [UInt8](repeating: 0, count: 176 + 16)
    let length = encryptionKey.withUnsafeBytes { key in
        securotp_aes_cbc_encrypt(key.baseAddress, key.count, nonce, plain, plain.count, 0, &ciphertext)
    }
    guard length == 176 else { return Fuzz.require(false, "AES-CBC encryption failed") }
    var raw: [UInt8] = [version, passwordLocked ? 1 + style >> 4 : 0, deviceLocked ? 1 : 0]
    raw += SecurIDCTF.sha256(nonce + device) + SecurIDCTF.sha256(nonce + device + secret) + nonce + ciphertext.prefix(176)
    raw += HMAC.authenticate(.sha256, key: macKey, message: raw)
    var text = Base64Encoder.encode(raw)
    if style & 2 != 0 { text = Base64Encoder.percentEscaped(text) }
    if style & 4 != 0 { text = SecurIDCTF.urlPrefixes[Int(style >> 3) % 3] + "ctfData=" + Base64Encoder.percentEscaped(text) }

    let options = ImportOptions(password: passwordLocked || style & 8 != 0 ? password : nil,
                                bindingID: deviceLocked || style & 16 != 0 ? binding : nil, now: now)
    let serialBytes = Array(plain[0..<16].prefix { $0 != 0 })
    let serialOK = serialBytes.count == 12 && serialBytes.allSatisfy { (0x30...0x39).contains($0) }
    let digitsOK = (1...8).contains(plain[35])
    switch Result(catching: { () throws(ImportError) in try SecurIDCTF.decode(text, options: options) }) {
    case .success(let token):
        check(token)
        Fuzz.require(serialOK && digitsOK, "\(text): a bad serial or digit count imported")
        Fuzz.require(seedOf(token) == Array(plain[16..<32]) && token.serial == String(decoding: serialBytes, as: UTF8.self),
                     "\(text) imported another seed or serial")
        guard case .securID(let got) = token.kind else { return }
        Fuzz.require(got.digits == Int(plain[35]) && got.interval == (plain[37] == 60 ? 60 : 30) && got.addsPIN == (plain[36] != 0x1F),
                     "\(text) imported other settings")
    case .failure(let error):
        let allowed: Bool = switch error.code {
        case .malformed: !serialOK
        case .unsupported: serialOK && !digitsOK
        case .expired: serialOK && digitsOK
        default: false
        }
        Fuzz.require(allowed, "built string \(text) refused: \(error.code): \(error.message)")
    }
}
