import Foundation
import Testing

/// Two securotpd processes on one PostgreSQL database (issue 14 item 8, docs/push.md "Several
/// validators on one PostgreSQL database"): a host waits on node A, the device answers on node
/// B, the wait ends at once with the approval (NOTIFY/LISTEN, no polling), and the approval is
/// handed out once. The device is played with openssl (a P-256 key, ES256 signatures).
@Suite("Validator nodes: push approval across two securotpd on PostgreSQL", .serialized)
struct PushClusterProcessTests {
    /// JSON POST with curl; the answer's object.
    static func post(_ url: String, _ path: String, _ body: [String: Any], bearer: String? = nil) throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: body)
        var arguments = ["-sS", "--max-time", "40", "-H", "Content-Type: application/json", "-d", String(decoding: data, as: UTF8.self)]
        if let bearer { arguments += ["-H", "Authorization: Bearer \(bearer)"] }
        let result = try Run.run("/usr/bin/curl", arguments + [url + path])
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func sha256(_ box: Sandbox, _ bytes: [UInt8]) throws -> [UInt8] {
        let file = box.path("digest-input")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let result = try Run.run(try Tools.openssl(), ["dgst", "-sha256", "-r", file])
        let hex = Array(result.stdout.prefix(64).utf8)
        return stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16) }
    }

    /// docs/push.md, "The signed statement".
    static func statement(_ fields: [String]) -> [UInt8] {
        var out = Array("securotp-push-v1".utf8)
        for field in fields {
            let bytes = Array(field.utf8)
            let length = UInt32(bytes.count)
            out += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + bytes
        }
        return out
    }

    @Test("A host waits on node A, the device answers on node B: the wait returns at once with the approval; a second wait on either node gets none")
    func answerOnAnotherNode() throws {
        let box = try Sandbox()
        let database = "securotp_it_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        try TestPostgres.sql("CREATE DATABASE \(database)")
        defer { try? TestPostgres.sql("DROP DATABASE IF EXISTS \(database) WITH (FORCE)") }
        let url = TestPostgres.url(database: database)
        #expect(try box.cli(["--state-dir", box.state, "binding-id", "root"]).status == 0)
        let store = ["--database", url, "--store-key", box.state + "/securotp.key"]
        let host = try ValidatorClusterTests.hostCredential(box, store: store)
        let added = try box.cli(store + ["device", "add", "alice", "--format", "json"])
        #expect(added.status == 0, "\(added)")
        let code = try #require((try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])?["activation_code"] as? String)

        // The device's key pair.
        let key = box.path("device.pem"), spki = box.path("device.spki")
        #expect(try Run.run(try Tools.openssl(), ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]).status == 0)
        #expect(try Run.run(try Tools.openssl(), ["ec", "-in", key, "-pubout", "-outform", "DER", "-out", spki]).status == 0)
        let publicKey = Array(try Data(contentsOf: URL(fileURLWithPath: spki)))

        let settings = ValidatorClusterTests.unlimited.merging(["database": url]) { $1 }
        let nodeA = try Validator(box, state: box.state, settings: settings, pki: nil)
        let nodeB = try Validator(box, state: box.state, settings: settings, pki: nil)

        let activated = try Self.post(nodeB.url, "/v1/devices/activate", ["activation_code": code, "public_key": Self.base64URL(publicKey),
                                                                           "user_verification": true])
        let device = try #require(activated["device"] as? String, "\(activated)")
        let credential = try #require(activated["credential"] as? String)

        let nonce = Self.base64URL(Array(repeating: 9, count: 32))
        let opened = try Self.post(nodeA.url, "/v1/push", ["user": "alice", "nonce": nonce, "number": "314159", "service": "sshd",
                                                           "remote_address": "192.0.2.9", "tty": "ssh", "command": ""], bearer: host)
        let id = try #require(opened["id"] as? String, "\(opened)")
        let listed = try Self.post(nodeB.url, "/v1/device/requests", ["wait": 1], bearer: credential)
        let request = try #require((listed["requests"] as? [[String: Any]])?.first { $0["id"] as? String == id }, "\(listed)")
        func field(_ name: String) -> String { request[name] as? String ?? "" }

        // The device's signed approval (docs/push.md): UP and UV set, counter 0.
        let statement = Self.statement([id, field("user"), field("host"), field("service"), field("remote_address"), field("tty"), field("command"),
                                        field("nonce"), "314159", String(request["expires"] as? Int ?? 0), device])
        let clientData = Array(#"{"type":"securotp.push.approve","challenge":"\#(Self.base64URL(try Self.sha256(box, statement)))","origin":"securotp:push"}"#.utf8)
        let authenticatorData = try Self.sha256(box, Array("securotp-push".utf8)) + [0x05, 0, 0, 0, 0]
        let signed = box.path("signed"), signature = box.path("signature")
        try Data(authenticatorData + (try Self.sha256(box, clientData))).write(to: URL(fileURLWithPath: signed))
        #expect(try Run.run(try Tools.openssl(), ["dgst", "-sha256", "-sign", key, "-out", signature, signed]).status == 0)
        let answer: [String: Any] = ["id": id, "decision": "approve", "number": "314159", "authenticator_data": Self.base64URL(authenticatorData),
                                     "client_data_json": Self.base64URL(clientData),
                                     "signature": Self.base64URL(Array(try Data(contentsOf: URL(fileURLWithPath: signature))))]

        // The host's wait on node A, in flight while the device answers on node B.
        let waitBody = String(decoding: try JSONSerialization.data(withJSONObject: ["id": id, "wait": 30]), as: UTF8.self)
        let waiting = try Run.start("/usr/bin/curl", ["-sS", "--max-time", "40", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(host)",
                                                      "-d", waitBody, nodeA.url + "/v1/push/wait"])
        usleep(500_000)
        let answered = try Self.post(nodeB.url, "/v1/device/answer", answer, bearer: credential)
        let committed = Date()
        #expect(answered["state"] as? String == "approved", "\(answered)")
        let waited = try waiting.wait(timeout: 40)
        let elapsed = Date().timeIntervalSince(committed)
        let result = try JSONSerialization.jsonObject(with: Data(waited.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(result["state"] as? String == "consumed" && result["approval"] != nil, "\(waited)")
        #expect(elapsed < 3, "node A's wait ended \(elapsed) s after node B committed the answer (bound 30 s)")

        // Exactly once: no second approval, on either node.
        for node in [nodeA, nodeB] {
            let again = try Self.post(node.url, "/v1/push/wait", ["id": id, "wait": 1], bearer: host)
            #expect(again["state"] as? String == "consumed" && again["approval"] == nil, "\(again)")
        }
        for node in [nodeA, nodeB] { #expect(try node.stop().status == 0) }
    }
}
