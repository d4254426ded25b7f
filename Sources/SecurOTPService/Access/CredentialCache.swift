import Foundation

/// Credential rows a node has read in the last `lifetime` seconds, so that a busy host's
/// requests do not each cost a database round trip before their real work. What a cached row
/// can delay is a revocation made on another node (or by the CLI against the database): it
/// takes effect there within `lifetime`. A revocation made through this node drops the row at
/// once; unknown credentials are never cached.
public final class CredentialCache: @unchecked Sendable {
    public static let lifetime: Int64 = 1

    private struct Entry {
        let record: CredentialRecord
        let read: Int64
    }

    private let lock = NSLock()
    private var entries: [String: Entry] = [:]

    public init() {}

    public func record(id: String, now: Int64) -> CredentialRecord? {
        lock.lock()
        defer { lock.unlock() }
        guard let entry = entries[id], now - entry.read < Self.lifetime else { return nil }
        return entry.record
    }

    public func keep(_ record: CredentialRecord, now: Int64) {
        lock.lock()
        defer { lock.unlock() }
        // One row per credential ever seen, replaced on each read: bounded by the credentials
        // table, not by requests (unknown ids are not kept).
        entries[record.id] = Entry(record: record, read: now)
    }

    /// After a revocation through this node.
    public func forget(kind: CredentialKind, name: String) {
        lock.lock()
        defer { lock.unlock() }
        entries = entries.filter { !($0.value.record.kind == kind && $0.value.record.name == name) }
    }
}
