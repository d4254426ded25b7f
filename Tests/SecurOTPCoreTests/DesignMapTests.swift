import Foundation
import Testing

/// docs/design.md is the map a newcomer reads first: every file it names must exist, or the map
/// sends them nowhere. A path (`Sources/…`, `Tests/…`) must be that file or folder; a bare file
/// name (`PushRules.swift`) or a path relative to a folder (`Routes/PushRoutes.swift`) must end
/// some file's path in the tree; a relative link must resolve from docs/.
@Suite("docs/design.md names only files that exist")
struct DesignMapTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let topFolders = ["Sources/", "Tests/", "pam/", "scripts/", "docs/", "bench/", "fuzz/", "tests/", "webapp/", "debian/", "packaging/"]
    static let fileSuffixes = [".swift", ".c", ".h", ".sh", ".md", ".yaml", ".py"]

    /// Every file under the repository's top folders, as paths relative to the root.
    static func treeFiles() -> [String] {
        var files: [String] = []
        for folder in topFolders {
            let base = root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let relative as String in walker { files.append(folder + relative) }
        }
        return files
    }

    /// The code spans of a Markdown text: what the map names.
    static func codeSpans(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap { index, part in
            index % 2 == 1 && !part.contains("\n") && !part.contains(" ") ? String(part) : nil
        }
    }

    /// Relative link targets, `](target)` or `](target#anchor)`.
    static func linkTargets(_ text: String) -> [String] {
        text.components(separatedBy: "](").dropFirst().compactMap { rest in
            guard let end = rest.firstIndex(of: ")") else { return nil }
            let target = String(rest[..<end].prefix { $0 != "#" })
            return target.isEmpty || target.hasPrefix("http") ? nil : target
        }
    }

    @Test("Every path, file name and relative link in docs/design.md exists")
    func everyNamedFileExists() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/design.md"), encoding: .utf8)
        let files = Self.treeFiles()
        var checked = 0
        for span in Self.codeSpans(text) {
            if Self.topFolders.contains(where: { span.hasPrefix($0) }) {
                checked += 1
                #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(span).path), "docs/design.md names \(span), which does not exist")
            } else if Self.fileSuffixes.contains(where: { span.hasSuffix($0) }), !span.contains("*") {
                checked += 1
                #expect(files.contains { $0 == span || $0.hasSuffix("/" + span) }, "docs/design.md names \(span), which no file in the tree is")
            }
        }
        for target in Self.linkTargets(text) {
            checked += 1
            let resolved = Self.root.appendingPathComponent("docs").appendingPathComponent(target).standardizedFileURL.path
            #expect(FileManager.default.fileExists(atPath: resolved), "docs/design.md links to \(target), which does not exist")
        }
        #expect(checked > 100, "the map names \(checked) files: the scan found too few to mean anything")
    }

    @Test("The scan sees paths, bare names and links, and tells a missing one")
    func scanFindsNames() {
        let text = "See `Sources/SecurOTPCore/OTP.swift`, `PushRules.swift`, `a b`, and [push](push.md#x)."
        #expect(Self.codeSpans(text) == ["Sources/SecurOTPCore/OTP.swift", "PushRules.swift"])
        #expect(Self.linkTargets(text) == ["push.md"])
        #expect(!Self.treeFiles().contains { $0.hasSuffix("/NoSuchFile.swift") })
        #expect(Self.treeFiles().contains("Sources/SecurOTPCore/OTP.swift"))
    }
}
