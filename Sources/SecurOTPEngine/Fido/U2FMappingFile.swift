import SecurOTPCore

/// pam_u2f's mapping file (`authfile=`, u2f_keys, u2f_mappings), read as pam_u2f 1.4.0 reads
/// it (docs/fido.md, "pam_u2f's mapping files"): byte-wise, a line is the bytes up to a `\n`
/// (the last line needs none); nothing else ends a line, so a `\r` before the `\n` stays in the
/// line's last field; a NUL byte ends the line's text (pam_u2f reads it as a C string). The user
/// is the first `:`-separated field (leading `:`s skipped, no blank trimmed, no comment syntax:
/// `#x` is a user no account has), compared byte for byte with the login name; the other
/// non-empty `:` fields are the credentials, in the line's order. A user's last line is the one
/// that counts. Bytes that are not UTF-8, anywhere, touch only the line they are in.
public enum U2FMappingFile {
    public struct Line: Sendable {
        /// 1-based line number in the file.
        public let number: Int
        /// The user field's bytes, exactly as pam_u2f compares them.
        public let userBytes: [UInt8]
        /// Every credential field of the line, in the line's order: parsed, or why not.
        public let entries: [Entry]

        /// The user field as text; nil when it is not UTF-8 (no login name matches it then).
        public var user: String? { String(validating: userBytes, as: UTF8.self) }
        /// The credentials that parsed, in the line's order.
        public var credentials: [FidoCredential] { entries.compactMap { $0.credential } }
        /// One text per credential that did not parse: `credential N: why`.
        public var problems: [String] {
            var found: [String] = []
            for (index, entry) in entries.enumerated() where entry.credential == nil {
                found.append("credential \(index + 1): \(entry.problem)")
            }
            return found
        }
    }

    public struct Entry: Sendable {
        public let credential: FidoCredential?
        public let problem: String
    }

    /// The file's lines that name a user (a line of only `:`s, an empty line or one starting
    /// with NUL names none), every user's or only `user`'s.
    public static func lines(_ bytes: [UInt8], origin: String, appID: String, user: String? = nil) -> [Line] {
        let wanted = user.map { Array($0.utf8) }
        var found: [Line] = []
        var number = 0
        var start = 0
        while start < bytes.count {
            number += 1
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            let next = end + 1
            // A C string: the text ends at a NUL.
            var textEnd = start
            while textEnd < end, bytes[textEnd] != 0 { textEnd += 1 }
            let fields = split(bytes[start..<textEnd], on: UInt8(ascii: ":"))
            start = next
            guard let name = fields.first else { continue }
            if let wanted, !name.elementsEqual(wanted) { continue }
            let entries = fields.dropFirst().map { field in
                let (credential, problem) = FidoCredential.parse(fieldBytes: field, origin: origin, appID: appID)
                return Entry(credential: credential, problem: problem)
            }
            found.append(Line(number: number, userBytes: Array(name), entries: entries))
        }
        return found
    }

    /// `user`'s line as pam_u2f reads it: the last one in the file; nil when the user has none.
    public static func line(for user: String, in bytes: [UInt8], origin: String, appID: String) -> Line? {
        lines(bytes, origin: origin, appID: appID, user: user).last
    }

    /// The file has a line for `user`, whatever the line holds (no credential, or none that
    /// parses): the file names the user as a key holder, so `nouserok` does not apply.
    public static func userHasLine(_ user: String, in bytes: [UInt8]) -> Bool {
        let wanted = Array(user.utf8)
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            var textEnd = start
            while textEnd < end, bytes[textEnd] != 0 { textEnd += 1 }
            if let name = split(bytes[start..<textEnd], on: UInt8(ascii: ":")).first, name.elementsEqual(wanted) { return true }
            start = end + 1
        }
        return false
    }

    /// strtok_r's fields: the runs between separators, empty runs skipped.
    static func split(_ bytes: ArraySlice<UInt8>, on separator: UInt8) -> [ArraySlice<UInt8>] {
        var fields: [ArraySlice<UInt8>] = []
        var fieldStart = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == separator {
                if index > fieldStart { fields.append(bytes[fieldStart..<index]) }
                fieldStart = index + 1
            }
            index += 1
        }
        if bytes.endIndex > fieldStart { fields.append(bytes[fieldStart..<bytes.endIndex]) }
        return fields
    }
}
