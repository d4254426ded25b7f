// pam_u2f's mapping file (`authfile=`, U2FMappingFile and FidoCredential.parse in
// SecurOTPEngine): the PAM module reads it at every login of every user when authfile= is set,
// so a trap here is SIGILL inside sshd or sudo, and a misread line logs one user in with
// another's key (issue 25, item 9).
//
// Properties, against a reader written here as pam_u2f 1.4.0 reads (getline, a NUL ends the
// C string, strtok_r on ":" then on ","): the lines that name a user, their numbers, user bytes
// and credential fields are exactly the reference's; `line(for:)` is the user's last line and
// `userHasLine` agrees; a line that is not the user's (any bytes: CRLF, not UTF-8, a NUL)
// added before or after never changes the user's credentials; every credential that parses
// has the attributes strstr finds and prints back (`u2fField`) to a field that parses to the
// same credential.
import FuzzSupport
@testable import SecurOTPCore
@testable import SecurOTPEngine

private let origin = "pam://fuzz"

/// pam_u2f's reading, written here: the lines with a user, as (number, user, fields).
private func reference(_ bytes: [UInt8]) -> [(number: Int, user: [UInt8], fields: [[UInt8]])] {
    var out: [(number: Int, user: [UInt8], fields: [[UInt8]])] = []
    var number = 0
    var current: [UInt8] = []
    var index = 0
    func finish() {
        number += 1
        let text = current.prefix { $0 != 0 }
        var tokens: [[UInt8]] = []
        var token: [UInt8] = []
        for byte in text {
            if byte == UInt8(ascii: ":") {
                if !token.isEmpty { tokens.append(token) }
                token = []
            } else {
                token.append(byte)
            }
        }
        if !token.isEmpty { tokens.append(token) }
        if let user = tokens.first { out.append((number, user, Array(tokens.dropFirst()))) }
        current = []
    }
    while index < bytes.count {
        if bytes[index] == 0x0A { finish() } else { current.append(bytes[index]) }
        index += 1
    }
    if !current.isEmpty { finish() }
    return out
}

private func strstr(_ haystack: [UInt8], _ needle: String) -> Bool {
    let wanted = Array(needle.utf8)
    guard haystack.count >= wanted.count else { return false }
    return (0...(haystack.count - wanted.count)).contains { Array(haystack[$0..<$0 + wanted.count]) == wanted }
}

private func commaFields(_ field: [UInt8]) -> [[UInt8]] {
    field.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true).map(Array.init)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMappingFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Fuzz.bytes(data, size)
    let expected = reference(bytes)
    let lines = U2FMappingFile.lines(bytes, origin: origin, appID: origin)
    Fuzz.require(lines.count == expected.count, "\(lines.count) lines with a user, the reference reads \(expected.count)")
    for (line, wanted) in zip(lines, expected) {
        Fuzz.require(line.number == wanted.number && line.userBytes == wanted.user && line.entries.count == wanted.fields.count,
                     "line \(line.number) read otherwise than pam_u2f reads it")
        for (entry, field) in zip(line.entries, wanted.fields) {
            let parts = commaFields(field)
            guard let credential = entry.credential else {
                Fuzz.require(!entry.problem.isEmpty, "a credential refused without a reason")
                continue
            }
            Fuzz.require(parts.count >= 2, "a credential with fewer than two fields parsed")
            if parts.count > 2 {
                let attributes = parts.count > 3 ? parts[3] : []
                Fuzz.require(credential.presence == strstr(attributes, "+presence") && credential.verification == strstr(attributes, "+verification")
                             && credential.pin == strstr(attributes, "+pin"), "attributes read otherwise than strstr finds them")
                Fuzz.require(credential.resident == (parts[0] == Array("*".utf8)), "resident otherwise than KH == *")
            }
            let again = FidoCredential.parse(field: Substring(credential.u2fField), origin: origin).credential
            Fuzz.require(again.map { $0.keyHandle == credential.keyHandle && $0.publicKey == credential.publicKey && $0.type == credential.type
                                     && $0.presence == credential.presence && $0.verification == credential.verification && $0.pin == credential.pin } == true,
                         "a parsed credential does not print back to itself")
        }
    }
    // Each user's line: the last one; other lines, whatever they hold, change nothing.
    var checked: [[UInt8]] = []
    for wanted in expected.reversed() where !checked.contains(wanted.user) {
        checked.append(wanted.user)
        guard let user = String(validating: wanted.user, as: UTF8.self), Array(user.utf8) == wanted.user else { continue }
        let line = U2FMappingFile.line(for: user, in: bytes, origin: origin, appID: origin)
        Fuzz.require(line?.number == wanted.number, "\(user)'s line is not the last one naming them")
        Fuzz.require(U2FMappingFile.userHasLine(user, in: bytes), "userHasLine misses \(user)")
        let noise: [UInt8] = [0xFF, 0x3A, 0x0D, 0x0A, 0x00] + Array("x:".utf8) + [0xC3, 0x0D, 0x0A]
        let before = U2FMappingFile.line(for: user, in: noise + bytes, origin: origin, appID: origin)
        Fuzz.require(before?.number == wanted.number + 2 && before?.entries.count == line?.entries.count
                     && before.map { $0.credentials.map(\.u2fField) } == line.map { $0.credentials.map(\.u2fField) },
                     "a line of other bytes before the file changed \(user)'s credentials")
        if bytes.last == 0x0A {
            let after = U2FMappingFile.line(for: user, in: bytes + noise, origin: origin, appID: origin)
            Fuzz.require(after?.number == wanted.number && after?.entries.count == line?.entries.count,
                         "a line of other bytes after the file changed \(user)'s line")
        }
    }
    let stranger = "zz-not-in-file"
    if !expected.contains(where: { $0.user == Array(stranger.utf8) }) {
        Fuzz.require(U2FMappingFile.line(for: stranger, in: bytes, origin: origin, appID: origin) == nil
                     && !U2FMappingFile.userHasLine(stranger, in: bytes), "a user without a line has one")
    }
    return 0
}
