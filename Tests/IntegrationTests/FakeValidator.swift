// A scripted stand-in for securotpd, for what a real validator never does on purpose: answers
// that are malformed, hostile or out of protocol, and a record of exactly what the module
// sent (to prove a password never leaves the host). Plain HTTP on 127.0.0.1 — which the module
// allows on loopback only — served by Python's http.server.
import Foundation
import Glibc
import Testing

final class FakeValidator {
    /// One canned answer: status and body text.
    struct Answer {
        let status: Int
        let body: String

        static func json(_ body: String, status: Int = 200) -> Answer { Answer(status: status, body: body) }
        static let hasTokens = json(#"{"has_tokens":true,"code_digits":[6]}"#)
        static let accept = json(#"{"result":"accept","serial":"100001","code_digits":6}"#)
        static let reject = json(#"{"result":"reject","reason":"wrong code","failures":1}"#)
        static func error(_ status: Int, _ code: String) -> Answer {
            json(#"{"error":{"code":"\#(code)","message":"scripted \#(code)"}}"#, status: status)
        }
    }

    /// One request the module made.
    struct Request: Decodable {
        let path: String
        let authorization: String?
        let contentType: String?
        let body: String

        enum CodingKeys: String, CodingKey {
            case path, authorization, body
            case contentType = "content_type"
        }

        /// The body as JSON (the module must always send valid JSON).
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
    }

    static let script = #"""
        import http.server, json, sys
        answers = json.load(open(sys.argv[1]))
        log = open(sys.argv[2], "a")
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                log.write(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"),
                                      "content_type": self.headers.get("Content-Type"),
                                      "body": body.decode("utf-8", "surrogateescape")}) + "\n")
                log.flush()
                queue = answers.get(self.path) or [[404, '{"error":{"code":"not_found","message":"no such path"}}']]
                status, text = queue.pop(0) if len(queue) > 1 else queue[0]
                data = text.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            def log_message(self, *args):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        with open(sys.argv[3] + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        import os
        os.rename(sys.argv[3] + ".tmp", sys.argv[3])
        server.serve_forever()
        """#

    let child: Child
    let port: Int
    private let logFile: String

    var url: String { "http://127.0.0.1:\(port)" }

    /// Serves `answers` per path, in order; the last answer of a path repeats.
    init(_ box: Sandbox, answers: [String: [Answer]]) throws {
        let stem = box.path("fake-\(UUID().uuidString.prefix(8))")
        let scriptFile = stem + ".py"
        let answerFile = stem + ".json"
        let portFile = stem + ".port"
        logFile = stem + ".log"
        try box.write(Self.script, to: scriptFile)
        let table = answers.mapValues { $0.map { [$0.status, $0.body] as [Any] } }
        try JSONSerialization.data(withJSONObject: table).write(to: URL(fileURLWithPath: answerFile))
        child = try Run.start("/usr/bin/python3", [scriptFile, answerFile, logFile, portFile])
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: portFile) {
            if Date() > deadline || child.errorOutput.contains("Traceback") {
                kill(child.pid, SIGKILL)
                throw HarnessError("the fake validator did not start:\n\(try child.wait(timeout: 5))")
            }
            usleep(20_000)
        }
        port = Int(try String(contentsOfFile: portFile, encoding: .utf8)) ?? 0
        box.keepAlive(self)
    }

    deinit {
        kill(child.pid, SIGTERM)
        _ = try? child.wait(timeout: 10)
    }

    /// Every request so far, in order.
    func requests() throws -> [Request] {
        guard let text = try? String(contentsOfFile: logFile, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { try JSONDecoder().decode(Request.self, from: Data($0.utf8)) }
    }
}
