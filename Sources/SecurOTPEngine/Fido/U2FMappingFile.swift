/// pam_u2f's mapping file (`authfile=`, u2f_keys, u2f_mappings): one line per user,
/// `user:cred[:cred...]`, each credential `KH,PK,type,attributes` or the old U2F-format `KH,PK`
/// (docs/fido.md, "pam_u2f's mapping files"). As in pam_u2f, a user's last line is the one that counts.
public enum U2FMappingFile {
    public struct Line: Sendable {
        /// 1-based line number in the file.
        public let number: Int
        public let user: String
        /// The credentials that parsed, in the line's order.
        public let credentials: [FidoCredential]
        /// One text per credential that did not parse: `credential N: why`.
        public let problems: [String]
    }

    /// The file's lines with a user (blank lines and `#` comments skipped), every user's or only
    /// `user`'s; a line without `user:` is reported with an empty user and a problem.
    public static func lines(_ text: String, origin: String, appID: String, user: String? = nil) -> [Line] {
        var found: [Line] = []
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            var line = raw
            while let last = line.last, last == "\r" || last == " " || last == "\t" { line = line.dropLast() }
            while let first = line.first, first == " " || first == "\t" { line = line.dropFirst() }
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count >= 2, let name = fields.first, !name.isEmpty else {
                if user == nil { found.append(Line(number: number, user: "", credentials: [], problems: ["not user:KH,PK,type,attributes"])) }
                continue
            }
            if let user, name != user { continue }
            var credentials: [FidoCredential] = []
            var problems: [String] = []
            for (index, field) in fields.dropFirst().enumerated() {
                let (credential, problem) = FidoCredential.parse(field: field, origin: origin, appID: appID)
                if let credential { credentials.append(credential) } else { problems.append("credential \(index + 1): \(problem)") }
            }
            found.append(Line(number: number, user: String(name), credentials: credentials, problems: problems))
        }
        return found
    }

    /// `user`'s line as pam_u2f reads it: the last one in the file; nil when the user has none.
    public static func line(for user: String, in text: String, origin: String, appID: String) -> Line? {
        lines(text, origin: origin, appID: appID, user: user).last
    }
}
