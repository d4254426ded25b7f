import Foundation
import SecurOTPCore
import Testing

/// docs/errors.md, the code lists (Sources/SecurOTPCore/ErrorCode.swift) and the sources agree:
/// every documented code exists and the other way round, every module log line and CLI error
/// names a code, and every code is emitted somewhere in the sources.
@Suite("Error codes: docs/errors.md, the catalogue and the sources agree")
struct ErrorCatalogueTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The rows `| CODE | column | …` of the table under `## heading`, in order.
    static func table(_ heading: String) throws -> [(code: String, second: String)] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/errors.md"), encoding: .utf8)
        var rows: [(String, String)] = []
        var inside = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") { inside = line.hasPrefix("## \(heading)") }
            guard inside, line.hasPrefix("| "), !line.hasPrefix("| Code"), !line.hasPrefix("|---") else { continue }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            rows.append((cells[0].replacingOccurrences(of: "`", with: ""), cells[1]))
        }
        return rows
    }

    /// Every Swift file under Sources/<target> for each target, with its path.
    static func sources(_ targets: [String]) -> [(path: String, text: String)] {
        var files: [(String, String)] = []
        for target in targets {
            let directory = root.appendingPathComponent("Sources/\(target)")
            guard let walk = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walk where url.pathExtension == "swift" {
                if let text = try? String(contentsOf: url, encoding: .utf8) { files.append(("\(target)/\(url.lastPathComponent)", text)) }
            }
        }
        return files
    }

    static func matches(_ pattern: String, in text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }

    static func caseName<Code: RawRepresentable<String>>(_ code: Code) -> String { "\(code)" }

    @Test("the module table lists exactly ModuleLogCode, in order")
    func moduleTable() throws {
        let documented = try Self.table("Module").map(\.code)
        #expect(documented == ModuleLogCode.allCases.map(\.rawValue))
        #expect(Set(ModuleLogCode.allCases.map(\.rawValue)).count == ModuleLogCode.allCases.count)
    }

    @Test("the CLI table lists exactly CLIErrorCode with its exit status, in order")
    func cliTable() throws {
        let documented = try Self.table("CLIs")
        #expect(documented.map(\.code) == CLIErrorCode.allCases.map(\.rawValue))
        #expect(documented.map(\.second) == CLIErrorCode.allCases.map { "\($0.exitStatus)" })
        #expect(Set(CLIErrorCode.allCases.map(\.rawValue)).count == CLIErrorCode.allCases.count)
    }

    static let moduleTargets = ["SecurOTPPAM"]

    @Test("every module log call names a code; only PAMSession writes to syslog")
    func everyModuleLogHasACode() {
        let known = Set(ModuleLogCode.allCases.map(Self.caseName))
        var calls = 0
        for file in Self.sources(Self.moduleTargets) {
            for call in Self.matches(#"\blog\(\s*(handle,\s*)?([^,)]*)"#, in: file.text) {
                let argument = call[2]
                if file.text.contains("func \(call[0])") { continue } // the definitions
                if file.path.hasSuffix("/PAMSession.swift") && argument == "code" { continue } // log forwarding its code
                calls += 1
                #expect(argument.hasPrefix(".") && known.contains(String(argument.dropFirst())),
                        "\(file.path): log(\(argument), …) names no ModuleLogCode")
            }
            if !file.path.hasSuffix("/PAMSession.swift") {
                #expect(!file.text.contains("securotp_pam_syslog"), "\(file.path) logs around PAMSession.log")
            }
        }
        #expect(calls > 50)
    }

    @Test("every ModuleLogCode is logged somewhere in the module")
    func everyModuleCodeIsLogged() {
        let used = Set(Self.sources(Self.moduleTargets).flatMap { file in
            Self.matches(#"\blog\(\s*(?:handle,\s*)?\.(\w+)"#, in: file.text).map { $0[1] }
        })
        for code in ModuleLogCode.allCases {
            #expect(used.contains(Self.caseName(code)), "\(code.rawValue) (.\(Self.caseName(code))) is never logged")
        }
    }

    static let cliTargets = ["securotp", "securotp-authenticator", "securotpd", "SecurOTPCommandLine", "SecurOTPService"]

    @Test("every CLI failure names a code: no exit status without one")
    func everyCLIErrorHasACode() {
        for file in Self.sources(Self.cliTargets) {
            for call in Self.matches(#"CLIError\((?!_ code)([^,)]*)"#, in: file.text) {
                #expect(call[1].hasPrefix("."), "\(file.path): CLIError(\(call[1]), …) names no CLIErrorCode")
            }
            // The programs' own fail(code, message) (SecurOTPService has an unrelated one).
            for call in Self.matches(#"\bfail\(([^,\n]*),"#, in: file.text) where !call[1].hasPrefix("_ code") && !file.path.hasPrefix("SecurOTPService/") {
                #expect(call[1].hasPrefix(".") || call[1].hasSuffix("ode") || call[1].contains("cliCode") || call[1].hasPrefix("CLIErrorCode("),
                        "\(file.path): fail(\(call[1]), …) names no CLIErrorCode")
            }
            #expect(!file.text.contains("exitCode: 6") && !file.text.contains("exitCode: 7"),
                    "\(file.path) gives an exit status without a code")
        }
    }

    @Test("every CLIErrorCode is emitted somewhere in the CLIs")
    func everyCLICodeIsEmitted() {
        var used: Set<String> = []
        for file in Self.sources(Self.cliTargets) {
            for call in Self.matches(#"(?:CLIError\(|fail\()\.(\w+)"#, in: file.text) { used.insert(call[1]) }
            if file.text.contains("CLIError.usage(") { used.insert("usage") }
            // The mappings from the service's, the authenticator's and the importer's codes.
            for block in Self.matches(#"var cliCode: CLIErrorCode \{[^}]*\}"#, in: file.text) {
                for arm in Self.matches(#":\s*\.(\w+)"#, in: block[0]) { used.insert(arm[1]) }
            }
            for arm in Self.matches(#"self = status == 64 \? \.(\w+) : \.(\w+)"#, in: file.text) { used.formUnion(arm[1...]) }
        }
        for code in CLIErrorCode.allCases {
            #expect(used.contains(Self.caseName(code)), "\(code.rawValue) (.\(Self.caseName(code))) is never emitted")
        }
    }
}
