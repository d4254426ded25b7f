import ArgumentParser
import Foundation
import SecurOTPService
import SecurOTPCore
import SecurOTPCommandLine

/// `securotp import-batch FILE`: many users at once, one line each — for moving a fleet from
/// another system. Each line is imported on its own (all of its tokens or none); the lines run
/// several at a time, which the store commits together.
struct ImportBatch: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-batch",
        abstract: "Import tokens for many users: one line per user, USER and an otpauth URI (or CTF string).",
        discussion: """
        FILE (or - for standard input) has one line per user: the user name, white space, then the token string, e.g.
          alice  otpauth://totp/ACME:alice?secret=JBSWY3DPEHPK3PXP&issuer=ACME
        Blank lines and lines starting with # are skipped; extra tab-separated fields between the user and the token string are ignored. Every line is imported on its own: a bad line is reported with its number and the others still go in. Exits 65 when any line failed.

        Examples:
          securotp import-batch /root/migrated-users.txt
          securotp --server https://otp.example.com:8443 --credential /root/admin.cred import-batch users.txt --jobs 32
        """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file, or - for standard input.") var file: String
    @Option(help: "How many lines are imported at the same time (1–64).") var jobs = 16

    func validate() throws {
        guard (1...64).contains(jobs) else { throw ValidationError("--jobs must be 1–64 (got \(jobs))") }
    }

    struct Line: Sendable {
        let number: Int
        let user: String
        let source: String
    }

    func run(in context: CommandContext) async throws {
        let text: String
        if file == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let data = FileManager.default.contents(atPath: file) else { throw CLIError(.inputUnreadable, "cannot read \(file)") }
            text = String(decoding: data, as: UTF8.self)
        }
        var lines: [Line] = []
        var failures = 0
        for (index, raw) in TextLines.split(text).enumerated() {
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            guard fields.count >= 2, let source = fields.last else {
                standardError("\(TerminalText.escaped(file)):\(index + 1): expected USER and a token string\n")
                failures += 1
                continue
            }
            lines.append(Line(number: index + 1, user: String(first), source: String(source)))
        }
        let caller = context.caller
        let file = self.file
        let jobs = self.jobs
        let (imported, failed) = try await context.withService(create: true) { service in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                var imported = 0, failed = 0, next = 0
                func collect(_ ok: Bool) { if ok { imported += 1 } else { failed += 1 } }
                while next < lines.count || !group.isEmpty {
                    while next < lines.count, next < imported + failed + jobs {
                        let line = lines[next]
                        next += 1
                        group.addTask {
                            let request = ImportRequest(source: Data(line.source.utf8).base64EncodedString())
                            do throws(ServiceError) {
                                _ = try await service.importTokens(user: line.user, request, caller: caller)
                                return true
                            } catch {
                                standardError("\(TerminalText.escaped(file)):\(line.number): \(TerminalText.escaped(line.user)): \(error.message)\n")
                                return false
                            }
                        }
                    }
                    if let ok = try await group.next() { collect(ok) }
                }
                return (imported, failed)
            }
        }
        failures += failed
        context.print("Imported tokens for \(imported) user\(imported == 1 ? "" : "s")\(failures > 0 ? "; \(failures) line\(failures == 1 ? "" : "s") failed (see above)" : "").")
        if failures > 0 { throw ExitCode(65) }
    }
}
