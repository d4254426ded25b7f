import Foundation

/// docs/api/openapi.yaml, read through Python's yaml module (PyYAML) into JSON: which
/// operations exist and which statuses each documents.
final class OpenAPIDocument: @unchecked Sendable {
    static let shared = OpenAPIDocument()

    struct Operation: Hashable, CustomStringConvertible {
        let method: String
        /// As the document writes it: /v1/users/{user}/tokens
        let path: String
        var description: String { "\(method) \(path)" }
    }

    static var path: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/api/openapi.yaml").path
    }

    private let lock = NSLock()
    private var loaded: [Operation: Set<Int>]?

    func operations() throws -> [Operation: Set<Int>] {
        lock.lock()
        defer { lock.unlock() }
        if let loaded { return loaded }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", Self.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let document = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let paths = document["paths"] as? [String: Any] else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: Self.path])
        }
        var result: [Operation: Set<Int>] = [:]
        for (path, item) in paths {
            guard let item = item as? [String: Any] else { continue }
            for method in ["get", "put", "post", "delete", "patch"] {
                guard let operation = item[method] as? [String: Any], let responses = operation["responses"] as? [String: Any] else { continue }
                result[Operation(method: method.uppercased(), path: path)] = Set(responses.keys.compactMap { Int($0) })
            }
        }
        loaded = result
        return result
    }

    /// The statuses documented for a concrete request path (query string ignored); empty
    /// when no documented operation matches.
    func statuses(method: String, path: String) throws -> Set<Int> {
        let concrete = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        let segments = concrete.split(separator: "/", omittingEmptySubsequences: false)
        for (operation, statuses) in try operations() where operation.method == method {
            let template = operation.path.split(separator: "/", omittingEmptySubsequences: false)
            guard template.count == segments.count else { continue }
            if zip(template, segments).allSatisfy({ $0.hasPrefix("{") || $0 == $1 }) { return statuses }
        }
        // Paths no operation documents still answer with the envelope: 404 (or 405).
        return [404, 405]
    }
}
