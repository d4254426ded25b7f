import Glibc
import SecurOTPStore
import SecurOTPCore

/// The PAM service files of a directory, with `@include`, `include` and `substack` followed:
/// which services reach a pam_securotp line, directly or through a shared file such as
/// common-auth (where pam-auth-update puts it), and where each such line is.
struct PAMStacks {
    /// One line of a PAM file that names pam_securotp.
    struct ModuleLine {
        let file: String
        let line: Int
        let rule: PAMRule
        var location: String { "\(file):\(line)" }
    }

    /// How a service reaches a module line: `via` lists the files included on the way.
    struct Use {
        let service: String
        let line: ModuleLine
        let via: [String]
    }

    private enum Entry {
        case rule(PAMRule, line: Int)
        /// `@include NAME` (every type) or `TYPE include|substack NAME`.
        case include(String, type: String?)
    }

    let directory: String
    /// Every line that names the module, in file and line order.
    private(set) var moduleLines: [ModuleLine] = []
    /// Every service whose auth stack reaches the module, by service name.
    private(set) var uses: [Use] = []
    private var files: [String: [Entry]] = [:]

    var serviceNames: [String] { uses.map(\.service).reduce(into: []) { if !$0.contains($1) { $0.append($1) } } }

    /// nil when the directory cannot be read.
    init?(directory: String) {
        self.directory = directory
        guard let handle = opendir(directory) else { return nil }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(name) }
        }
        closedir(handle)
        names.sort()
        for name in names {
            let path = directory + "/" + name
            guard let bytes = try? FileSecurity.contents(of: path, .policy, maxSize: 1 << 20),
                  let content = String(validating: bytes, as: UTF8.self) else { continue }
            var entries: [Entry] = []
            for (index, text) in TextLines.split(content).enumerated() {
                let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
                if words.count >= 2, words[0] == "@include" {
                    entries.append(.include(String(words[1]), type: nil))
                    continue
                }
                guard let rule = PAMRule(parsing: String(text)) else { continue }
                if rule.control == "include" || rule.control == "substack" {
                    entries.append(.include(rule.module, type: rule.type))
                } else {
                    entries.append(.rule(rule, line: index + 1))
                    if rule.module.contains("pam_securotp") { moduleLines.append(ModuleLine(file: path, line: index + 1, rule: rule)) }
                }
            }
            files[name] = entries
        }
        for name in names {
            for (line, via) in authLines(name, depth: 0, seen: [name]) where line.rule.module.contains("pam_securotp") {
                uses.append(Use(service: name, line: line, via: via))
            }
        }
    }

    /// The auth lines a service runs, in order, with the files included on the way.
    private func authLines(_ name: String, depth: Int, seen: [String]) -> [(ModuleLine, [String])] {
        guard depth < 8, let entries = files[name] else { return [] }
        var lines: [(ModuleLine, [String])] = []
        for entry in entries {
            switch entry {
            case .rule(let rule, let line) where rule.type == "auth":
                lines.append((ModuleLine(file: directory + "/" + name, line: line, rule: rule), []))
            case .rule:
                continue
            case .include(let other, let type):
                // Include paths are relative to the PAM directory; absolute ones are read as they are only
                // when they lie in it (doctor checks one directory).
                let included = other.hasPrefix(directory + "/") ? String(other.dropFirst(directory.count + 1)) : other
                guard type == nil || type == "auth", !seen.contains(included) else { continue }
                for (line, via) in authLines(included, depth: depth + 1, seen: seen + [included]) {
                    lines.append((line, [included] + via))
                }
            }
        }
        return lines
    }

    /// "sshd (via common-auth)".
    static func describe(_ use: Use) -> String {
        use.via.isEmpty ? use.service : "\(use.service) (via \(use.via.joined(separator: " → ")))"
    }
}
