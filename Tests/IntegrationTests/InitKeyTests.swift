// securotp init and securotp key generate: the store and keys made on purpose, owner-only,
// never replaced; an existing store only checked.
import Foundation
import Glibc
import Testing

@Suite("Admin CLI: init and key generate")
struct InitKeyTests {
    @Test("init makes key and database owner-only, says so, and a second run changes nothing")
    func initCreatesOnce() throws {
        let box = try Sandbox()
        let first = try box.cli(["init"])
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains("Key file: \(box.state)/securotp.key (created"), "\(first)")
        #expect(first.stdout.contains("Database: \(box.state)/securotp.db (created"), "\(first)")
        #expect(try box.mode(of: box.state + "/securotp.key") == 0o600)
        #expect(try box.mode(of: box.state + "/securotp.db") == 0o600)
        #expect(try box.mode(of: box.state) == 0o700)
        let key = try Data(contentsOf: URL(fileURLWithPath: box.state + "/securotp.key"))

        let again = try box.cli(["init", "--quiet"])
        #expect(again.status == 0 && again.stdout.isEmpty, "\(again)")
        let checked = try box.cli(["init"])
        #expect(checked.stdout.contains("exists, checked"), "\(checked)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.state + "/securotp.key")) == key, "init never replaces a key")
        // The store init made is the one enroll uses.
        _ = try box.enroll("root")
    }

    @Test("init refuses a database whose key is missing (it would make its seeds unreadable)")
    func initRefusesOrphanDatabase() throws {
        let box = try Sandbox()
        _ = try box.cli(["init"])
        #expect(unlink(box.state + "/securotp.key") == 0)
        let result = try box.cli(["init"])
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("restore the key file from backup"), "\(result)")
    }

    @Test("key generate writes a 68-byte owner-only key and never overwrites one")
    func keyGenerate() throws {
        let box = try Sandbox()
        let path = box.path("cluster.key")
        let result = try Run.run(box.securotp, ["key", "generate", "--output", path])
        #expect(result.status == 0, "\(result)")
        #expect(try box.mode(of: path) == 0o600)
        let key = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(key.count == 68 && key.prefix(4) == Data("SOK1".utf8))
        let again = try Run.run(box.securotp, ["key", "generate", "--output", path])
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == key)
    }
}
