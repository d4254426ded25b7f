import COpenSSLImport
import Foundation
import SecurOTPCore

/// The encryption algorithms securotp reads in PSKC `EncryptionMethod` (XML Encryption URIs,
/// matched by the fragment after '#', as in RFC 6030 §6).
enum PSKCCipher: Equatable {
    /// `xmlenc#aes128-cbc` etc.: CipherValue = IV (16) ‖ ciphertext, padded; needs a ValueMAC.
    case aesCBC(keyLength: Int)
    /// `xmlenc#kw-aes128` etc. (RFC 3394) and `xmlenc11#kw-aes-128-pad` etc. (RFC 5649).
    case aesKeyWrap(keyLength: Int, padded: Bool)

    init(uri: String) throws(ImportError) {
        switch PSKCCipher.fragment(uri) {
        case "aes128-cbc": self = .aesCBC(keyLength: 16)
        case "aes192-cbc": self = .aesCBC(keyLength: 24)
        case "aes256-cbc": self = .aesCBC(keyLength: 32)
        case "kw-aes128": self = .aesKeyWrap(keyLength: 16, padded: false)
        case "kw-aes192": self = .aesKeyWrap(keyLength: 24, padded: false)
        case "kw-aes256": self = .aesKeyWrap(keyLength: 32, padded: false)
        case "kw-aes-128-pad", "kw-aes128-pad": self = .aesKeyWrap(keyLength: 16, padded: true)
        case "kw-aes-192-pad", "kw-aes192-pad": self = .aesKeyWrap(keyLength: 24, padded: true)
        case "kw-aes-256-pad", "kw-aes256-pad": self = .aesKeyWrap(keyLength: 32, padded: true)
        default:
            throw ImportError(.unsupported, "PSKC encryption algorithm \(uri) is not supported "
                + "(securotp reads aes128/192/256-cbc and kw-aes128/192/256, with or without padding)")
        }
    }

    var keyLength: Int {
        switch self {
        case .aesCBC(let length), .aesKeyWrap(let length, _): length
        }
    }

    var name: String {
        switch self {
        case .aesCBC(let length): "aes\(length * 8)-cbc"
        case .aesKeyWrap(let length, let padded): padded ? "kw-aes-\(length * 8)-pad" : "kw-aes\(length * 8)"
        }
    }

    /// "http://www.w3.org/2001/04/xmlenc#aes128-cbc" → "aes128-cbc".
    static func fragment(_ uri: String) -> String {
        let tail = uri.split(separator: "#", omittingEmptySubsequences: false).last.map(String.init) ?? uri
        return tail.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// HMAC names as they appear in MACMethod and PBKDF2 PRF: "…xmldsig#hmac-sha1",
    /// "…xmldsig-more#hmac-sha256", "hmac-sha-512". Nil for anything else.
    static func hmacAlgorithm(_ uri: String) -> HashAlgorithm? {
        switch fragment(uri).replacingOccurrences(of: "-", with: "") {
        case "hmacsha1": .sha1
        case "hmacsha256": .sha256
        case "hmacsha512": .sha512
        default: nil
        }
    }
}

/// Everything needed to open a PSKC file's encrypted values: where the encryption key comes
/// from (pre-shared transport key or PBKDF2 password), and the MAC algorithm and key.
final class PSKCKeyring {
    struct PBKDF2Parameters {
        var salt: [UInt8]
        var iterations: UInt32
        var keyLength: Int?
        var prf: HashAlgorithm
        var keyName: String?
    }

    private enum Source {
        case preshared(name: String?)
        case pbkdf2(PBKDF2Parameters)
    }

    private let source: Source
    private let options: ImportOptions
    private let macMethod: PSKCNode?
    private var derivedKeys: [Int: SecretBytes] = [:]
    private var macKeyCache: (algorithm: HashAlgorithm, key: SecretBytes)?

    init(container: PSKCNode, options: ImportOptions) throws(ImportError) {
        self.options = options
        macMethod = container.child("MACMethod")
        let encryptionKey = container.child("EncryptionKey")
        if let derived = encryptionKey?.child("DerivedKey") {
            source = .pbkdf2(try PSKCKeyring.pbkdf2Parameters(derived))
        } else if encryptionKey?.child("X509Data") != nil {
            throw ImportError(.unsupported, "PSKC files encrypted to an X.509 certificate (asymmetric keys) are not supported; "
                + "ask for a password-protected (PBKDF2) or pre-shared-key file")
        } else {
            let name = encryptionKey?.child("KeyName")?.text
            source = .preshared(name: name.flatMap { $0.isEmpty ? nil : $0 })
        }
    }

    var isPasswordBased: Bool {
        if case .pbkdf2 = source { return true }
        return false
    }

    private static func pbkdf2Parameters(_ derived: PSKCNode) throws(ImportError) -> PBKDF2Parameters {
        guard let method = derived.child("KeyDerivationMethod") else {
            throw ImportError(.malformed, "PSKC DerivedKey has no KeyDerivationMethod")
        }
        let algorithm = method.attribute("Algorithm") ?? ""
        guard PSKCCipher.fragment(algorithm) == "pbkdf2" else {
            throw ImportError(.unsupported, "PSKC key derivation \(algorithm.isEmpty ? "(none given)" : algorithm) is not supported; securotp reads PBKDF2")
        }
        guard let parameters = method.child("PBKDF2-params") else {
            throw ImportError(.malformed, "PSKC PBKDF2 key derivation has no PBKDF2-params")
        }
        guard let saltNode = parameters.child("Salt") else { throw ImportError(.malformed, "PSKC PBKDF2-params has no Salt") }
        if saltNode.child("OtherSource") != nil {
            throw ImportError(.unsupported, "PSKC PBKDF2 salt from OtherSource is not supported")
        }
        let saltText = saltNode.child("Specified")?.text ?? saltNode.text
        guard !saltText.isEmpty, let salt = TokenImporter.Base64.decode(Array(saltText.utf8)) else {
            throw ImportError(.malformed, "PSKC PBKDF2 Salt is not valid base64")
        }
        guard let iterationText = parameters.child("IterationCount")?.text, let iterations = UInt32(iterationText), iterations > 0 else {
            throw ImportError(.malformed, "PSKC PBKDF2 IterationCount is missing or not a positive integer")
        }
        guard iterations <= 10_000_000 else {
            throw ImportError(.unsupported, "PSKC PBKDF2 IterationCount \(iterations) is beyond securotp's limit of 10000000")
        }
        var keyLength: Int?
        if let lengthText = parameters.child("KeyLength")?.text {
            guard let length = Int(lengthText), [16, 24, 32].contains(length) else {
                throw ImportError(.unsupported, "PSKC PBKDF2 KeyLength \(lengthText) is not an AES key length (16, 24 or 32 bytes)")
            }
            keyLength = length
        }
        var prf = HashAlgorithm.sha1
        if let prfNode = parameters.child("PRF") {
            // RFC 8018 puts the PRF in an Algorithm attribute; python-pskc 1.4 writes it as text.
            let name = prfNode.attribute("Algorithm") ?? prfNode.text
            if !name.isEmpty {
                guard let algorithm = PSKCCipher.hmacAlgorithm(name) else {
                    throw ImportError(.unsupported, "PSKC PBKDF2 PRF \(name) is not supported (HMAC-SHA1, -SHA256 or -SHA512)")
                }
                prf = algorithm
            }
        }
        let keyName = derived.child("MasterKeyName")?.text
        return PBKDF2Parameters(salt: salt, iterations: iterations, keyLength: keyLength, prf: prf,
                                keyName: keyName.flatMap { $0.isEmpty ? nil : $0 })
    }

    // MARK: keys

    /// The encryption key for a value encrypted with `cipher`.
    func encryptionKey(for cipher: PSKCCipher) throws(ImportError) -> SecretBytes {
        switch source {
        case .preshared(let name):
            let named = name.map { " \"\($0)\"" } ?? ""
            guard let key = options.transportKey else {
                throw ImportError(.password, "this PSKC file is encrypted with the pre-shared key\(named); give that transport key")
            }
            guard key.count == cipher.keyLength else {
                throw ImportError(.password, "the transport key is \(key.count) bytes, but this PSKC file's \(cipher.name) "
                    + "needs a \(cipher.keyLength)-byte key\(named)")
            }
            return key
        case .pbkdf2(let parameters):
            let named = parameters.keyName.map { " (\"\($0)\")" } ?? ""
            guard let password = options.password, !password.isEmpty else {
                throw ImportError(.password, "this PSKC file is protected by a password\(named); give the password")
            }
            if let length = parameters.keyLength, length != cipher.keyLength {
                throw ImportError(.malformed, "PSKC PBKDF2 KeyLength is \(length) bytes but \(cipher.name) needs \(cipher.keyLength)")
            }
            if let cached = derivedKeys[cipher.keyLength] { return cached }
            let key = SecretBytes(count: cipher.keyLength)
            let ok = key.withUnsafeMutableBytes { out in
                securotp_pbkdf2(PSKCKeyring.cIdentifier(parameters.prf), password, password.count, parameters.salt,
                                parameters.salt.count, parameters.iterations, out.baseAddress, out.count) == 1
            }
            guard ok else { throw ImportError(.malformed, "PSKC PBKDF2 key derivation failed") }
            derivedKeys[cipher.keyLength] = key
            return key
        }
    }

    private var wrongKeyHint: String {
        isPasswordBased ? "wrong password" : "wrong transport key"
    }

    /// The MAC algorithm and key; `cipher` picks the encryption key when there is no `MACKey`
    /// (older files MAC with the encryption key itself).
    private func macKey(for cipher: PSKCCipher) throws(ImportError) -> (algorithm: HashAlgorithm, key: SecretBytes, isEncryptionKey: Bool) {
        var algorithm = HashAlgorithm.sha1
        if let uri = macMethod?.attribute("Algorithm"), !uri.isEmpty {
            guard let named = PSKCCipher.hmacAlgorithm(uri) else {
                throw ImportError(.unsupported, "PSKC MAC algorithm \(uri) is not supported (HMAC-SHA1, -SHA256 or -SHA512)")
            }
            algorithm = named
        }
        if let cached = macKeyCache { return (cached.algorithm, cached.key, false) }
        if let macMethod, macMethod.child("MACKeyReference") != nil, macMethod.child("MACKey") == nil {
            throw ImportError(.unsupported, "PSKC MACKeyReference (a MAC key delivered out of band) is not supported")
        }
        guard let encrypted = macMethod?.child("MACKey") else {
            return (algorithm, try encryptionKey(for: cipher), true)
        }
        let macCipher = try PSKCKeyring.cipher(of: encrypted, what: "MACKey")
        let data = try PSKCKeyring.cipherValue(of: encrypted, what: "MACKey")
        let key = try encryptionKey(for: macCipher)
        guard let macKey = PSKCKeyring.decrypt(data, cipher: macCipher, key: key), macKey.count > 0 else {
            throw ImportError(.password, "the PSKC MAC key does not decrypt: \(wrongKeyHint) (or the MACKey was altered)")
        }
        macKeyCache = (algorithm, macKey)
        return (algorithm, macKey, false)
    }

    // MARK: values

    /// Opens one `EncryptedValue`, checking its `ValueMAC` (over IV ‖ ciphertext as RFC 6030
    /// says, or over the plaintext as some older producers did) before the value is used.
    func decrypt(_ encrypted: PSKCNode, valueMAC: PSKCNode?, what: String) throws(ImportError) -> SecretBytes {
        let cipher = try PSKCKeyring.cipher(of: encrypted, what: what)
        let data = try PSKCKeyring.cipherValue(of: encrypted, what: what)
        let key = try encryptionKey(for: cipher)

        var expectedMAC: [UInt8]?
        if let valueMAC {
            guard let decoded = TokenImporter.Base64.decode(Array(valueMAC.text.utf8)), !decoded.isEmpty else {
                throw ImportError(.malformed, "\(what): ValueMAC is not valid base64")
            }
            expectedMAC = decoded
        }
        if case .aesCBC = cipher, expectedMAC == nil {
            throw ImportError(.malformed, "\(what) is AES-CBC encrypted without a ValueMAC (RFC 6030 requires one); "
                + "securotp needs it to tell a wrong key from a right one")
        }
        guard let expectedMAC else {
            // Key wrap carries its own integrity check.
            guard let plain = PSKCKeyring.decrypt(data, cipher: cipher, key: key) else {
                throw ImportError(.password, "\(what) does not unwrap (\(cipher.name) integrity check failed): "
                    + "\(wrongKeyHint), or the value was altered")
            }
            return plain
        }

        let mac = try macKey(for: cipher)
        let overCiphertext = HMAC.authenticate(mac.algorithm, key: mac.key, message: data)
        let ciphertextMatches = ConstantTime.equal(overCiphertext, expectedMAC)
        let plain = PSKCKeyring.decrypt(data, cipher: cipher, key: key)
        if ciphertextMatches {
            guard let plain else {
                throw ImportError(.malformed, "\(what): the ValueMAC matches but the value does not decrypt (bad padding or length)")
            }
            return plain
        }
        if let plain {
            let overPlaintext = plain.withUnsafeBytes { HMAC.authenticate(mac.algorithm, key: mac.key, message: $0) }
            if ConstantTime.equal(overPlaintext, expectedMAC) { return plain }
        }
        if mac.isEncryptionKey {
            throw ImportError(.password, "\(what): ValueMAC does not match: \(wrongKeyHint) (or the file was altered)")
        }
        throw ImportError(.checksum, "\(what): ValueMAC does not match: the file was altered or damaged "
            + "(or the \(isPasswordBased ? "password" : "transport key") is wrong)")
    }

    private static func cipher(of encrypted: PSKCNode, what: String) throws(ImportError) -> PSKCCipher {
        guard let uri = encrypted.child("EncryptionMethod")?.attribute("Algorithm"), !uri.isEmpty else {
            throw ImportError(.malformed, "\(what) has no EncryptionMethod Algorithm")
        }
        return try PSKCCipher(uri: uri)
    }

    private static func cipherValue(of encrypted: PSKCNode, what: String) throws(ImportError) -> [UInt8] {
        if encrypted.path("CipherData", "CipherReference") != nil {
            throw ImportError(.unsupported, "\(what) uses a CipherReference; only inline CipherValue is supported")
        }
        guard let text = encrypted.path("CipherData", "CipherValue")?.text, !text.isEmpty else {
            throw ImportError(.malformed, "\(what) has no CipherData/CipherValue")
        }
        guard let data = TokenImporter.Base64.decode(Array(text.utf8)) else {
            throw ImportError(.malformed, "\(what): CipherValue is not valid base64")
        }
        return data
    }

    // MARK: primitives

    /// Nil when the value does not decrypt: bad length, bad padding, failed unwrap check.
    static func decrypt(_ data: [UInt8], cipher: PSKCCipher, key: SecretBytes) -> SecretBytes? {
        switch cipher {
        case .aesCBC: return decryptCBC(data, key: key)
        case .aesKeyWrap(_, let padded):
            if !padded, let plain = unwrapRFC3394(data, key: key) { return plain }
            // python-pskc 1.4 writes RFC 5649 (padded) wrapping under the kw-aes URIs when the
            // secret is not a multiple of 8 bytes; the two are told apart by their check value.
            return unwrapRFC5649(data, key: key)
        }
    }

    /// AES-CBC with the IV in the first block. XML Encryption padding: the last byte gives the
    /// pad length (1–16); the other pad bytes are not checked (XML Encryption leaves them free).
    static func decryptCBC(_ data: [UInt8], key: SecretBytes) -> SecretBytes? {
        guard data.count >= 32, data.count % 16 == 0 else { return nil }
        let full = SecretBytes(count: data.count - 16)
        let length = data.withUnsafeBufferPointer { input in
            full.withUnsafeMutableBytes { out in
                key.withUnsafeBytes { keyBytes in
                    securotp_aes_cbc_decrypt(keyBytes.baseAddress, keyBytes.count, input.baseAddress,
                                             input.baseAddress! + 16, input.count - 16, 0, out.baseAddress)
                }
            }
        }
        guard length == full.count else { return nil }
        let pad = full.withUnsafeBytes { Int($0[$0.count - 1]) }
        guard pad >= 1, pad <= 16, pad <= full.count else { return nil }
        return full.withUnsafeBytes { SecretBytes(copying: $0.prefix(full.count - pad)) }
    }

    static func unwrapRFC3394(_ data: [UInt8], key: SecretBytes) -> SecretBytes? {
        guard data.count >= 24, data.count % 8 == 0 else { return nil }
        let out = SecretBytes(count: data.count)
        let length = data.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBytes { output in
                key.withUnsafeBytes { keyBytes in
                    securotp_aes_key_unwrap(keyBytes.baseAddress, keyBytes.count, input.baseAddress, input.count, output.baseAddress)
                }
            }
        }
        guard length == data.count - 8 else { return nil }
        return out.withUnsafeBytes { SecretBytes(copying: $0.prefix(length)) }
    }

    /// RFC 5649 (AES key wrap with padding). COpenSSLImport offers only RFC 3394 unwrapping, so
    /// this runs the RFC 3394 §2.2.2 unwrap steps on single AES block decryptions (CBC with a
    /// zero IV over one block), then checks the alternative initial value and the padding.
    static func unwrapRFC5649(_ data: [UInt8], key: SecretBytes) -> SecretBytes? {
        guard data.count >= 16, data.count % 8 == 0 else { return nil }
        let blocks = data.count / 8 - 1 // n, the number of 64-bit plaintext blocks
        let work = SecretBytes(count: data.count) // A ‖ R[1] … R[n]
        work.withUnsafeMutableBytes { buffer in
            for index in data.indices { buffer[index] = data[index] }
        }
        let ok = work.withUnsafeMutableBytes { buffer -> Bool in
            if blocks == 1 { return decryptBlock(buffer, at: 0, key: key) }
            let block = SecretBytes(count: 16)
            return block.withUnsafeMutableBytes { pair -> Bool in
                for j in stride(from: 5, through: 0, by: -1) {
                    for i in stride(from: blocks, through: 1, by: -1) {
                        var t = UInt64(blocks * j + i)
                        for byte in stride(from: 7, through: 0, by: -1) {
                            pair[byte] = buffer[byte] ^ UInt8(truncatingIfNeeded: t)
                            t >>= 8
                        }
                        for byte in 0..<8 { pair[8 + byte] = buffer[8 * i + byte] }
                        guard decryptBlock(pair, at: 0, key: key) else { return false }
                        for byte in 0..<8 {
                            buffer[byte] = pair[byte]
                            buffer[8 * i + byte] = pair[8 + byte]
                        }
                    }
                }
                return true
            }
        }
        guard ok else { return nil }
        return work.withUnsafeBytes { buffer -> SecretBytes? in
            guard buffer[0] == 0xA6, buffer[1] == 0x59, buffer[2] == 0x59, buffer[3] == 0xA6 else { return nil }
            var length = 0
            for byte in 4..<8 { length = length << 8 | Int(buffer[byte]) }
            guard length > 8 * (blocks - 1), length <= 8 * blocks else { return nil }
            var padding: UInt8 = 0
            for index in (8 + length)..<buffer.count { padding |= buffer[index] }
            guard padding == 0 else { return nil }
            return SecretBytes(copying: buffer[8..<(8 + length)])
        }
    }

    /// Decrypts the 16-byte block at `offset` of `buffer` in place (AES-ECB, one block).
    private static func decryptBlock(_ buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int, key: SecretBytes) -> Bool {
        guard let base = buffer.baseAddress, offset + 16 <= buffer.count else { return false }
        let zeroIV = [UInt8](repeating: 0, count: 16)
        let output = SecretBytes(count: 16)
        let length = output.withUnsafeMutableBytes { out in
            key.withUnsafeBytes { keyBytes in
                securotp_aes_cbc_decrypt(keyBytes.baseAddress, keyBytes.count, zeroIV, base + offset, 16, 0, out.baseAddress)
            }
        }
        guard length == 16 else { return false }
        output.withUnsafeBytes { out in
            for index in 0..<16 { buffer[offset + index] = out[index] }
        }
        return true
    }

    private static func cIdentifier(_ algorithm: HashAlgorithm) -> Int32 {
        switch algorithm {
        case .sha1: Int32(SECUROTP_IMPORT_SHA1)
        case .sha256: Int32(SECUROTP_IMPORT_SHA256)
        case .sha512: Int32(SECUROTP_IMPORT_SHA512)
        }
    }
}
