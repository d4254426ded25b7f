import SecurOTPService
import Testing

@Suite("Credential cache of a PostgreSQL node")
struct CredentialCacheTests {
    static func record(_ id: String, name: String, kind: CredentialKind = .host) -> CredentialRecord {
        CredentialRecord(id: id, kind: kind, name: name, secretHash: [1, 2, 3], users: [], groups: [], offlineCodes: 0, created: 0, revoked: 0,
                         lastUsed: 0)
    }

    @Test("A row is served for its lifetime only; a revocation through the node drops every row of that name at once")
    func lifetimeAndForget() {
        let cache = CredentialCache()
        #expect(cache.record(id: "a", now: 100) == nil)
        cache.keep(Self.record("a", name: "web1"), now: 100)
        cache.keep(Self.record("b", name: "web2"), now: 100)
        cache.keep(Self.record("c", name: "web1", kind: .admin), now: 100)
        #expect(cache.record(id: "a", now: 100)?.name == "web1")
        #expect(cache.record(id: "a", now: 100 + CredentialCache.lifetime) == nil, "read again once the lifetime is over")

        cache.forget(kind: .host, name: "web1")
        #expect(cache.record(id: "a", now: 100) == nil)
        #expect(cache.record(id: "b", now: 100) != nil, "other names stay")
        #expect(cache.record(id: "c", now: 100) != nil, "an admin of the same name stays")
    }
}
