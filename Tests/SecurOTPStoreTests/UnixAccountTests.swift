import CPosix
import SecurOTPStore
import Testing

/// Group names for `groups=` and group policies (UnixAccount.groupNames): a GID without a
/// group is skipped, a failed lookup makes the whole answer nil (the caller fails closed).
@Suite("UnixAccount: group names")
struct UnixAccountTests {
    @Test("A GID without a group entry is skipped; the other names are kept in order")
    func noEntrySkipped() {
        let names = UnixAccount.groupNames([100, 4242, 27] as [gid_t]) { id in
            switch id {
            case 100: .name("users")
            case 27: .name("sudo")
            default: .noEntry
            }
        }
        #expect(names == ["users", "sudo"])
    }

    @Test("A failed lookup of any GID makes the answer nil, never a partial list")
    func failureIsNil() {
        let names = UnixAccount.groupNames([100, 4242, 27] as [gid_t]) { id in id == 4242 ? .failed : .name("g\(id)") }
        #expect(names == nil)
    }

    @Test("root's groups resolve through NSS on this machine")
    func realLookup() throws {
        let root = try #require(UnixAccount.resolve("root"))
        #expect(root.groupNames()?.contains("root") == true)
    }
}
