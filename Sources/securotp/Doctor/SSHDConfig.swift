import Glibc
import SecurOTPStore
import SecurOTPCore

/// sshd_config as sshd reads it for the settings pam_securotp needs: `Include` files followed
/// (globs sorted, relative names under the main file's directory, as sshd does under /etc/ssh),
/// the FIRST value of a keyword wins, and a `Match` block holds per-connection settings until
/// the end of its file. Every value remembers its file and line, so that doctor can name the
/// earlier line that overrides a later one.
struct SSHDConfig {
    struct Setting {
        /// The arguments, as written.
        let value: String
        let file: String
        let line: Int
        var location: String { "\(file):\(line)" }
    }

    /// First value and the later (ignored) ones, by lowercased keyword; the deprecated
    /// ChallengeResponseAuthentication counts as KbdInteractiveAuthentication.
    private(set) var settings: [String: [Setting]] = [:]
    /// Files that could not be read (an Include that names nothing is not one).
    private(set) var unreadable: [String] = []

    let path: String

    init(path: String) {
        self.path = path
        read(path, depth: 0)
    }

    func first(_ keyword: String) -> Setting? { settings[keyword]?.first }

    /// Later lines for `keyword` whose value differs from the first: they have no effect.
    func ignored(_ keyword: String) -> [Setting] {
        guard let all = settings[keyword], let first = all.first else { return [] }
        return all.dropFirst().filter { $0.value.lowercased() != first.value.lowercased() }
    }

    private var baseDirectory: String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    private mutating func read(_ file: String, depth: Int) {
        guard depth < 16 else { return }
        guard let bytes = try? FileSecurity.contents(of: file, .policy, maxSize: 1 << 20),
              let text = String(validating: bytes, as: UTF8.self) else {
            unreadable.append(file)
            return
        }
        var lineNumber = 0
        for raw in TextLines.split(text) {
            lineNumber += 1
            let line = raw.drop { $0 == " " || $0 == "\t" }
            if line.isEmpty || line.hasPrefix("#") { continue }
            // `Keyword value` or `Keyword=value`.
            guard let end = line.firstIndex(where: { $0 == " " || $0 == "\t" || $0 == "=" }) else { continue }
            var keyword = line[..<end].lowercased()
            var rest = line[end...].drop { $0 == " " || $0 == "\t" || $0 == "=" }
            while let last = rest.last, last == " " || last == "\t" || last == "\r" { rest = rest.dropLast() }
            if keyword == "match" { return } // per-connection from here to the end of this file
            if keyword == "challengeresponseauthentication" { keyword = "kbdinteractiveauthentication" }
            if keyword == "include" {
                for pattern in rest.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                    let absolute = pattern.hasPrefix("/") ? String(pattern) : baseDirectory + "/" + pattern
                    for included in Self.glob(absolute) { read(included, depth: depth + 1) }
                }
                continue
            }
            settings[keyword, default: []].append(Setting(value: String(rest), file: file, line: lineNumber))
        }
    }

    /// Matching paths, sorted (glob's order); none when nothing matches.
    private static func glob(_ pattern: String) -> [String] {
        var result = glob_t()
        defer { globfree(&result) }
        guard Glibc.glob(pattern, 0, nil, &result) == 0 else { return [] }
        return (0..<Int(result.gl_pathc)).compactMap { index in result.gl_pathv[index].map { String(cString: $0) } }
    }
}
