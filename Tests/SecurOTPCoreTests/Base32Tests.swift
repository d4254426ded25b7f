import Testing
import SecurOTPCore

@Suite struct Base32Tests {
    /// RFC 4648 §10 test vectors.
    @Test(arguments: [("", ""), ("f", "MY======"), ("fo", "MZXQ===="), ("foo", "MZXW6==="),
                      ("foob", "MZXW6YQ="), ("fooba", "MZXW6YTB"), ("foobar", "MZXW6YTBOI======")])
    func rfc4648(plain: String, encoded: String) throws {
        let bytes = Array(plain.utf8)
        #expect(bytes.withUnsafeBufferPointer { Base32.encode($0, padding: true) } == encoded)
        let decoded = try #require(Base32.decode(encoded))
        #expect(decoded.withUnsafeBytes { Array($0) } == bytes)
    }

    @Test func toleratesCaseSpacesAndMissingPadding() throws {
        let decoded = try #require(Base32.decode("mzxw 6ytb-oi"))
        #expect(decoded.withUnsafeBytes { Array($0) } == Array("foobar".utf8))
    }

    @Test(arguments: ["MZXW6YTB1", "M", "MZX", "MZXW6Y", "MZ=XW6YTB", "MZXW6!"])
    func rejectsInvalid(text: String) { #expect(Base32.decode(text) == nil) }

    @Test func constantTimeEqualityComparesContents() {
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
    }
}
