import Foundation
import HTTPTypes
@testable import SecurOTPServer
import SecurOTPService
import Testing

/// The API section of docs/errors.md: the envelope's codes with their HTTP status. Every
/// APIClient call checks an error answer's code against it (ValidatorFixture.swift).
enum DocumentedAPIErrors {
    /// code → HTTP status, from the `## API` table.
    static let statuses: [String: Int] = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = (try? String(contentsOf: root.appendingPathComponent("docs/errors.md"), encoding: .utf8)) ?? ""
        var table: [String: Int] = [:]
        var inside = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("## ") { inside = line.hasPrefix("## API") }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard inside, cells.count >= 2, cells[0].hasPrefix("`"), let status = Int(cells[1]) else { continue }
            table[cells[0].replacingOccurrences(of: "`", with: "")] = status
        }
        return table
    }()
}

@Suite("Error codes: the API's envelope codes are the ones docs/errors.md lists")
struct ErrorCodesAPITests {
    @Test("every ServiceError code is listed with the status the API answers it with")
    func serviceCodes() {
        for code in ServiceError.Code.allCases {
            #expect(DocumentedAPIErrors.statuses[code.rawValue] == ServiceError(code, "").httpStatus, "\(code.rawValue)")
        }
    }

    @Test("the codes made from Hummingbird's statuses are listed, and the list has nothing else")
    func statusCodes() throws {
        var made = Set(ServiceError.Code.allCases.map(\.rawValue))
        for status in 400...599 {
            made.insert(ErrorEnvelopeMiddleware.code(for: HTTPResponse.Status(code: status)))
        }
        // Literal codes anywhere in the server (the catch-all "internal").
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources/SecurOTPServer")
        let regex = try NSRegularExpression(pattern: #"code: "(\w+)""#)
        for case let url as URL in FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)! where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                if let range = Range(match.range(at: 1), in: text) { made.insert(String(text[range])) }
            }
        }
        #expect(made == Set(DocumentedAPIErrors.statuses.keys))
        #expect(DocumentedAPIErrors.statuses["method_not_allowed"] == 405 && DocumentedAPIErrors.statuses["too_large"] == 413)
    }

    @Test("a running API answers documented codes: not_found, unauthorized, invalid_input")
    func answers() async throws {
        let fixture = try await ValidatorFixture.make()
        try await fixture.withClient { client in
            let unknownToken = try await client.call(.delete, "/v1/users/alice/tokens/0000000000", bearer: fixture.admin)
            #expect(unknownToken.status == 404 && unknownToken.errorCode == "not_found", "\(unknownToken.text)")
            let noCredential = try await client.call(.post, "/v1/preflight", ["user": "alice"])
            #expect(noCredential.status == 401 && noCredential.errorCode == "unauthorized", "\(noCredential.text)")
            let badJSON = try await client.call(.post, "/v1/preflight", bearer: fixture.host, rawBody: "{")
            #expect(badJSON.status == 400 && badJSON.errorCode == "invalid_input", "\(badJSON.text)")
        }
    }
}
