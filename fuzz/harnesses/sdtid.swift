// RSA SecurID .sdtid files (SecurIDSDTID and its own small XML reader SecurIDXML, in
// SecurOTPImport). The harness holds the password of test vector B; files without a password
// (vector A) unlock through their Origin.
//
// Every file is decoded twice: as it is, and with its HeaderMAC and TokenMACs recomputed for
// the harness's password (a mutated field no longer matches the MACs of the original file, so
// without this the fuzzer would hardly ever get past them to the seed decryption).
// Properties: the XML reader's tree, written out again, reads back as the same tree; an
// import has one usable token per <TKN> (a 12-digit serial, a 16-byte seed, 1–8 digits,
// 30 or 60 s, not expired); a file with recomputed MACs is never refused for its password or
// MACs, and when the original imported, both give the same seeds.
import FuzzSupport
import SecurOTPCore
import SecurOTPSecurID
@testable import SecurOTPImport

private let now: Int64 = 1_700_000_000
private let password = Array("Tr0ub4dor&3".utf8)
private let options = ImportOptions(password: password, now: now)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSDTID(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Fuzz.bytes(data, size)
    let original = Result { () throws(ImportError) in try SecurIDSDTID.decode(input, options: options) }
    guard let root = try? SecurIDXML.parse(input) else {
        if case .success = original { Fuzz.require(false, "imported a file whose XML does not parse") }
        return 0
    }
    checkTreeRoundTrip(root)
    if case .success(let tokens) = original { check(tokens, root) }
    guard let (remacked, samePassword) = withRecomputedMACs(root) else { return 0 }
    let again = Result { () throws(ImportError) in try SecurIDSDTID.decode(remacked, options: options) }
    switch again {
    case .success(let tokens):
        check(tokens, root)
        // Files unlocked by their Origin give other seeds under the harness's password.
        if case .success(let first) = original, samePassword {
            Fuzz.require(first.map(seedHex) == tokens.map(seedHex), "recomputing right MACs changed the seeds")
        }
    case .failure(let error):
        Fuzz.require(error.code != .password && error.code != .checksum,
                     "a file with recomputed MACs is refused: \(error.code): \(error.message)")
    }
    return 0
}

private func seedHex(_ token: ImportedToken) -> String { token.secret.withUnsafeBytes { Fuzz.hex($0) } }

private func check(_ tokens: [ImportedToken], _ root: SecurIDXMLElement) {
    Fuzz.require(tokens.count == root.children.filter { $0.isNamed("TKN") }.count, "\(tokens.count) tokens for the <TKN> elements")
    for token in tokens {
        guard case .securID(let parameters) = token.kind else { return Fuzz.require(false, "an .sdtid token that is not SecurID") }
        Fuzz.require(parameters.problem == nil, "parameters: \(parameters.problem ?? "")")
        Fuzz.require(token.secret.count == 16, "seed of \(token.secret.count) bytes")
        Fuzz.require(token.serial.map { $0.utf8.count == 12 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } } == true,
                     "serial \(token.serial ?? "nil")")
        Fuzz.require(!parameters.isExpired(at: now) && token.expires == parameters.expiresAt, "expired token imported")
        Fuzz.require(token.pinMode == (parameters.addsPIN ? .addedByToken : .prefix), "PIN mode \(token.pinMode)")
        Fuzz.require(token.account.map { !$0.isEmpty } != false, "empty account instead of none")
    }
}

private func checkTreeRoundTrip(_ root: SecurIDXMLElement) {
    let written = XMLWriter.document(root)
    guard let again = try? SecurIDXML.parse(written) else {
        return Fuzz.require(false, "the tree written out does not parse: \(String(decoding: written, as: UTF8.self))")
    }
    Fuzz.require(XMLWriter.same(root, again), "the tree written out reads back differently")
}

/// The document with HeaderMAC and every TokenMAC recomputed under the harness's password, and
/// whether its HeaderMAC was already right for that password; nil when the file lacks what the
/// keys are made from.
private func withRecomputedMACs(_ root: SecurIDXMLElement) -> ([UInt8], Bool)? {
    guard root.isNamed("TKNBatch"), let header = root.children.first(where: { $0.isNamed("TKNHeader") }),
          let batch = try? SecurIDSDTID.Batch(header: header) else { return nil }
    let tokens = root.children.filter { $0.isNamed("TKN") }
    guard !tokens.isEmpty, var keys = try? SecurIDSDTID.derive(batch: batch, tokens: tokens, passwordOrOrigin: password) else {
        return nil
    }
    defer {
        SecurIDCrypto.wipe(&keys.batchMAC)
        for index in keys.tokens.indices { keys.tokens[index].wipe() }
    }
    var document = root
    var tokenIndex = 0
    var headerDone = false
    var samePassword = false
    for index in document.children.indices {
        if document.children[index].isNamed("TKNHeader"), !headerDone {
            headerDone = true
            let mac = SecurIDCrypto.cbcMAC(key: keys.batchMAC, iv: SecurIDSDTID.batchIV, data: SecurIDSDTID.macInput(header))
            samePassword = mac == batch.headerMAC
            guard XMLWriter.setText(of: "HeaderMAC", in: &document.children[index], to: Array(Base64Encoder.encode(mac).utf8)) else { return nil }
        } else if document.children[index].isNamed("TKN") {
            let token = document.children[index]
            let mac = SecurIDCrypto.cbcMAC(key: keys.tokens[tokenIndex].mac, iv: SecurIDSDTID.tokenMACIV,
                                           data: SecurIDSDTID.macInput(token))
            guard XMLWriter.setText(of: "TokenMAC", in: &document.children[index], to: Array(Base64Encoder.encode(mac).utf8)) else { return nil }
            tokenIndex += 1
        }
    }
    return (XMLWriter.document(document), samePassword)
}

/// Writes a SecurIDXMLElement tree as XML: each element's text first (escaped), then its
/// children. SecurIDXML keeps an element's text as one run and ignores attributes, so this is
/// all of what it read.
enum XMLWriter {
    static func document(_ root: SecurIDXMLElement) -> [UInt8] {
        var out = Array("<?xml version=\"1.0\"?>\n".utf8)
        write(root, into: &out)
        return out
    }

    static func write(_ element: SecurIDXMLElement, into out: inout [UInt8]) {
        out += [UInt8(ascii: "<")] + element.name + [UInt8(ascii: ">")]
        for byte in element.text {
            switch byte {
            case UInt8(ascii: "&"): out += Array("&amp;".utf8)
            case UInt8(ascii: "<"): out += Array("&lt;".utf8)
            case UInt8(ascii: ">"): out += Array("&gt;".utf8)
            default: out.append(byte)
            }
        }
        for child in element.children { write(child, into: &out) }
        out += Array("</".utf8) + element.name + [UInt8(ascii: ">")]
    }

    static func same(_ a: SecurIDXMLElement, _ b: SecurIDXMLElement) -> Bool {
        a.name == b.name && a.text == b.text && a.children.count == b.children.count
            && zip(a.children, b.children).allSatisfy { same($0, $1) }
    }

    /// Replaces the text of the first descendant called `name` (the one SecurIDSDTID reads).
    static func setText(of name: String, in element: inout SecurIDXMLElement, to text: [UInt8]) -> Bool {
        for index in element.children.indices {
            if element.children[index].isNamed(name) {
                element.children[index].text = text
                return true
            }
            if setText(of: name, in: &element.children[index], to: text) { return true }
        }
        return false
    }
}
