// What a login in a new process writes to disk, seen by strace.
import Foundation
import Testing

@Suite("Durability: the fsyncs of a login in a new process")
struct DurabilityTests {
    /// One login under strace; its result and the traced openat/fsync/fdatasync lines.
    static func tracedLogin(_ box: Sandbox, _ service: String, _ code: String) throws -> (result: ProcessResult, trace: [String]) {
        let trace = box.root + "/strace-\(UUID().uuidString)"
        let result = try Run.run(try Tools.strace(), ["-f", "-qq", "-o", trace, "-e", "trace=openat,fsync,fdatasync",
                                                      box.pamCheck, "--confdir", box.pamDirectory, service, "root", code])
        return (result, try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init))
    }

    /// The descriptor an `openat(..., "…path", ...) = N` line returned.
    static func descriptor(opening path: String, in trace: [String]) -> String? {
        trace.last { $0.contains("\"\(path)\"") }?.split(separator: "=").last?.trimmingCharacters(in: .whitespaces)
    }

    static func syncs(_ trace: [String]) -> [String] {
        trace.filter { $0.contains("fsync(") || $0.contains("fdatasync(") }
    }

    @Test("With the WAL kept, a login makes one fdatasync, of the WAL; a missing WAL is created and its directory synced")
    func fsyncsOfALogin() throws {
        let box = try Sandbox()
        let token = try box.enroll("root", ["--hotp"])
        let service = try box.service("hotp")
        let codes = try Oath.hotpCodes(token.secret, first: 0, count: 3)
        let wal = box.state + "/securotp.db-wal"
        // The first commit after the CLI emptied the WAL also syncs the WAL's new header.
        #expect(try box.login(service, "root", [codes[0]]).status == PAM.success)

        let kept = try Self.tracedLogin(box, service, codes[1])
        #expect(kept.result.status == PAM.success, "\(kept.result)")
        let walOpen = kept.trace.filter { $0.contains("\"\(wal)\"") }
        #expect(walOpen.count == 1 && !walOpen[0].contains("O_CREAT"), "the kept WAL is opened, not created: \(walOpen)")
        let walDescriptor = try #require(Self.descriptor(opening: wal, in: kept.trace))
        #expect(Self.syncs(kept.trace) == Self.syncs(kept.trace).filter { $0.contains("(\(walDescriptor))") } &&
                Self.syncs(kept.trace).count == 1, "one sync, of the WAL (fd \(walDescriptor)): \(kept.trace)")

        // A CLI command checkpoints everything into the database when it ends; the emptied WAL
        // may then go, as after a restore from a backup of securotp.db alone.
        #expect(try box.cli(["list", "root"]).status == 0)
        #expect((try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) == 0, "checkpointed")
        try FileManager.default.removeItem(atPath: wal)
        try? FileManager.default.removeItem(atPath: box.state + "/securotp.db-shm")

        let created = try Self.tracedLogin(box, service, codes[2])
        #expect(created.result.status == PAM.success, "\(created.result)")
        let creation = created.trace.firstIndex { $0.contains("\"\(wal)\"") && $0.contains("O_CREAT") }
        let directoryDescriptor = try #require(Self.descriptor(opening: box.state, in: created.trace), "\(created.trace)")
        let directorySync = created.trace.firstIndex { ($0.contains("fsync(") || $0.contains("fdatasync(")) && $0.contains("(\(directoryDescriptor))") }
        let firstWALWrite = created.trace.firstIndex { $0.contains("fdatasync(") && !$0.contains("(\(directoryDescriptor))") }
        #expect(creation != nil && directorySync != nil && firstWALWrite != nil && creation! < directorySync! && directorySync! < firstWALWrite!,
                "the new WAL's directory is synced before the first commit into it: \(created.trace)")
        for code in codes {
            #expect(try box.login(service, "root", [code]).status == PAM.authError, "every code stays spent")
        }
    }
}
