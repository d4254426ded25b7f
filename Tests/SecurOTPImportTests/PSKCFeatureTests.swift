import Foundation
import Testing
@testable import SecurOTPImport
import SecurOTPCore

/// PSKC fields beyond the secret: PIN policy, user, serial, expiry, key usage, PIN keys, the
/// pre-RFC element names, and MAC variants older producers use.
@Suite struct PSKCFeatureTests {
    static let header = """
        <?xml version="1.0" encoding="UTF-8"?>
        <KeyContainer Version="1.0" xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
        """

    /// "MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=" is base64 of the ASCII digits 1234567890 twice.
    static let document = header + """
          <KeyPackage>
            <DeviceInfo><SerialNo>S-1</SerialNo><ExpiryDate>2031-01-01T00:00:00Z</ExpiryDate></DeviceInfo>
            <Key Id="k1" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:totp">
              <Issuer>Corp</Issuer>
              <AlgorithmParameters><Suite>HMAC-SHA512</Suite><ResponseFormat Length="8" Encoding="DECIMAL"/></AlgorithmParameters>
              <Data>
                <Secret><PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=</PlainValue></Secret>
                <Time><PlainValue>0</PlainValue></Time>
                <TimeInterval><PlainValue>60</PlainValue></TimeInterval>
                <TimeDrift><PlainValue>-2</PlainValue></TimeDrift>
              </Data>
              <Policy>
                <ExpiryDate>2030-01-01T00:00:00Z</ExpiryDate>
                <PINPolicy MinLength="4" PINUsageMode="Prepend"/>
                <KeyUsage>OTP</KeyUsage>
              </Policy>
              <UserId>alice</UserId>
            </Key>
          </KeyPackage>
          <KeyPackage>
            <DeviceInfo><SerialNo>S-2</SerialNo><UserId>bob</UserId></DeviceInfo>
            <Key Id="k2" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
              <AlgorithmParameters><ResponseFormat Length="7" Encoding="DECIMAL"/></AlgorithmParameters>
              <Data><Secret><PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=</PlainValue></Secret><Counter><PlainValue>42</PlainValue></Counter></Data>
              <Policy><PINPolicy PINKeyId="pin1" PINUsageMode="Algorithmic"/></Policy>
            </Key>
          </KeyPackage>
          <KeyPackage>
            <Key Id="pin1" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:pin">
              <AlgorithmParameters><ResponseFormat Length="4" Encoding="DECIMAL"/></AlgorithmParameters>
              <Data><Secret><PlainValue>MTIzNA==</PlainValue></Secret></Data>
            </Key>
          </KeyPackage>
          <KeyPackage>
            <Key Id="k3" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc#hotp">
              <FriendlyName>carol's token</FriendlyName>
              <AlgorithmParameters><ResponseFormat Length="6"/></AlgorithmParameters>
              <Data><Secret><PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=</PlainValue></Secret></Data>
              <Policy><PINPolicy PINUsageMode="Local"/></Policy>
            </Key>
          </KeyPackage>
        </KeyContainer>
        """

    @Test func readsPolicyUserSerialAndExpiry() throws {
        let tokens = try importText(Self.document)
        try #require(tokens.count == 3) // the PIN key is not a token
        let (totp, hotp, local) = (tokens[0], tokens[1], tokens[2])

        #expect(totp.oath == OATHParameters(kind: .totp, algorithm: .sha512, digits: 8, period: 60))
        #expect(totp.pinMode == .prefix)
        #expect(totp.account == "alice")
        #expect(totp.issuer == "Corp")
        #expect(totp.serial == "S-1")
        #expect(totp.expires == PSKCDateTime.unixTime("2030-01-01T00:00:00Z")) // the earlier of the two dates

        #expect(hotp.oath == OATHParameters(kind: .hotp, digits: 7, counter: 42))
        #expect(hotp.pinMode == .addedByToken)
        #expect(hotp.account == "bob")
        #expect(hotp.serial == "S-2")
        #expect(hotp.issuer == nil)
        #expect(hotp.expires == nil)

        #expect(local.pinMode == PINMode.none)
        #expect(local.account == "carol's token")
        #expect(local.oath?.counter == 0)
    }

    @Test func expiryUsesTheEarliestDate() throws {
        let expiry = try #require(PSKCDateTime.unixTime("2030-01-01T00:00:00Z"))
        #expect(importError(Self.document, options(now: expiry)) == nil)
        let error = try #require(importError(Self.document, options(now: expiry + 1)))
        #expect(error.code == .expired)
        #expect(error.message.contains("\"k1\""))
    }

    @Test func refusesKeysNotMeantForOTP() throws {
        let text = Self.document.replacingOccurrences(of: "<KeyUsage>OTP</KeyUsage>", with: "<KeyUsage>CR</KeyUsage>")
        #expect(importError(text)?.code == .unsupported)
        let profile = Self.header + """
            <KeyPackage><Key Id="p" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp"><KeyProfileId>profile-7</KeyProfileId>
            <Data><Secret><PlainValue>MTIz</PlainValue></Secret></Data></Key></KeyPackage></KeyContainer>
            """
        let error = try #require(importError(profile))
        #expect(error.code == .unsupported)
        #expect(error.message.contains("profile-7"))
    }

    /// Draft names: `Device` for `KeyPackage`, `KeyAlgorithm`/`KeyId`, `Usage`/`@Format`.
    @Test func readsPreRFCNames() throws {
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <pskc:KeyContainer xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc:1.0" Version="1.0">
              <pskc:Device>
                <pskc:DeviceInfo><pskc:SerialNo>old-1</pskc:SerialNo></pskc:DeviceInfo>
                <pskc:Key KeyAlgorithm="urn:ietf:params:xml:ns:keyprov:pskc#hotp" KeyId="old">
                  <pskc:Issuer>Old</pskc:Issuer>
                  <pskc:Usage OTP="true"><pskc:ResponseFormat Format="DECIMAL" Length="8"/></pskc:Usage>
                  <pskc:Data><pskc:Secret><pskc:PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=</pskc:PlainValue></pskc:Secret>
                  <pskc:Counter><pskc:PlainValue>9</pskc:PlainValue></pskc:Counter></pskc:Data>
                </pskc:Key>
              </pskc:Device>
            </pskc:KeyContainer>
            """
        let tokens = try importText(text)
        #expect(tokens.count == 1)
        #expect(tokens.first?.oath == OATHParameters(kind: .hotp, digits: 8, counter: 9))
        #expect(tokens.first?.serial == "old-1")
        #expect(tokens.first?.secretASCII == "12345678901234567890")
    }

    /// Older producers MAC the plaintext instead of IV ‖ ciphertext, and some omit MACKey
    /// (the encryption key is then the MAC key). The `cryptography` package encrypts; Python's
    /// hmac computes the MAC; the test writes the XML.
    @Test(arguments: ["ciphertext", "plaintext"])
    func macVariantsWithoutMACKey(macOver: String) throws {
        _ = try Oracle.requirePythonPSKC()
        let output = try Oracle.run(["python3", "-c", """
            import base64, hashlib, hmac, os, sys
            from cryptography.hazmat.primitives import padding
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
            key, iv, secret = os.urandom(16), os.urandom(16), os.urandom(20)
            padder = padding.PKCS7(128).padder()
            encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
            value = iv + encryptor.update(padder.update(secret) + padder.finalize()) + encryptor.finalize()
            mac = hmac.new(key, value if sys.argv[1] == 'ciphertext' else secret, hashlib.sha256).digest()
            print(key.hex(), secret.hex(), base64.b64encode(value).decode(), base64.b64encode(mac).decode())
            """, macOver])
        let fields = output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        try #require(fields.count == 4)
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <KeyContainer Version="1.0" xmlns="urn:ietf:params:xml:ns:keyprov:pskc"
                xmlns:ds="http://www.w3.org/2000/09/xmldsig#" xmlns:xenc="http://www.w3.org/2001/04/xmlenc#">
              <EncryptionKey><ds:KeyName>k</ds:KeyName></EncryptionKey>
              <MACMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#hmac-sha256"/>
              <KeyPackage><Key Id="m" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
                <AlgorithmParameters><ResponseFormat Length="6" Encoding="DECIMAL"/></AlgorithmParameters>
                <Data><Secret>
                  <EncryptedValue><xenc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
                    <xenc:CipherData><xenc:CipherValue>\(fields[2])</xenc:CipherValue></xenc:CipherData></EncryptedValue>
                  <ValueMAC>\(fields[3])</ValueMAC>
                </Secret></Data>
              </Key></KeyPackage>
            </KeyContainer>
            """
        #expect(try importText(xml, options(transportKeyHex: fields[0])).map(\.secretHex) == [fields[1]])
        let wrong = Hex.encode((try #require(Hex.decode(fields[0]))).map { $0 ^ 0x80 })
        // Without a separate MAC key a mismatch cannot be told from a wrong key: .password.
        #expect(importError(xml, options(transportKeyHex: wrong))?.code == .password)
        let altered = xml.replacingOccurrences(of: fields[3], with: Data(repeating: 1, count: 32).base64EncodedString())
        #expect(importError(altered, options(transportKeyHex: fields[0]))?.code == .password)
    }
}
