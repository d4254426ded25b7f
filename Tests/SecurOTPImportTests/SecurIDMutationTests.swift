import Foundation
import Testing
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

/// Random damage to valid inputs: the readers must answer every variant with a token or an
/// ImportError, never a crash, and never accept a changed seed silently.
@Suite struct SecurIDMutationTests {
    typealias F = SecurIDFixtures

    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(max(bound, 1)))
        }
    }

    static func mutate(_ input: [UInt8], _ random: inout Random, alphabet: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0...random.next(3) {
            guard !bytes.isEmpty else { break }
            let position = random.next(bytes.count)
            switch random.next(4) {
            case 0: bytes[position] = alphabet[random.next(alphabet.count)]
            case 1: bytes.remove(at: position)
            case 2: bytes.insert(alphabet[random.next(alphabet.count)], at: position)
            default: bytes = Array(bytes.prefix(position))
            }
        }
        return bytes
    }

    @Test func damagedSDTIDFiles() throws {
        let xml = Array(try #require(F.token("B")?["sdtid_xml"] as? String).utf8)
        let options = F.options(password: F.token("B")?["sdtid_password"] as? String)
        let expectedSeed = try #require(F.token("B")?["seed_hex"] as? String)
        let alphabet = Array("<>/&;#x!-[]?= \"'ABCabc0129\n\u{00}".utf8) + [0xFF, 0xC3]
        var random = Random(state: 0x5EC0_41D)
        var accepted = 0
        for _ in 0..<1500 {
            let damaged = Self.mutate(xml, &random, alphabet: alphabet)
            do {
                let tokens = try SecurIDSDTID.decode(damaged, options: options)
                accepted += 1
                // Only harmless changes (whitespace between elements, the trailer) get through.
                for token in tokens { #expect(F.seedHex(token) == expectedSeed) }
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        #expect(accepted < 1500)
    }

    @Test func damagedCTFStrings() throws {
        let alphabet = Array("0123456789-%2BAZaz+/=&?: ".utf8)
        var random = Random(state: 0xC7F)
        for name in ["A-v2", "A-v2-blocks", "A-v2-iphone-pass", "A-v3-pass-devid", "B-v3-devid"] {
            let string = Array(try #require(F.exportString(name)).utf8)
            let vector = try #require(F.vectors.first { $0["token"] as? String == F.exportString(name) })
            let options = F.options(password: vector["password"] as? String, device: vector["devid"] as? String)
            let letter = String(name.prefix(1))
            let expectedSeed = try #require(F.token(letter)?["seed_hex"] as? String)
            for _ in 0..<300 {
                let damaged = String(decoding: Self.mutate(string, &random, alphabet: alphabet), as: UTF8.self)
                do {
                    let token = try SecurIDCTF.decode(damaged, options: options)
                    // v2's 15-bit checksum lets about 1 in 32768 random changes through; any
                    // accepted string here must still carry the right seed.
                    #expect(F.seedHex(token) == expectedSeed, "\(name) damaged to \(damaged)")
                } catch {
                    #expect(!error.message.isEmpty)
                }
            }
        }
    }
}
