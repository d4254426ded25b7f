import SecurOTPCore
import Testing

@Suite struct LoopbackHostTests {
    @Test(arguments: ["localhost", "::1", "[::1]", "127.0.0.1", "127.1.2.3", "127.255.255.255"])
    func loopback(_ host: String) {
        #expect(LoopbackHost.contains(host))
    }

    /// Names DNS may point anywhere, other addresses, and malformed literals are not loopback:
    /// plain HTTP to them would let others read or change what is sent.
    @Test(arguments: ["127.evil.example", "127.0.0.1.example.com", "127.0.0.256", "127.0.0", "127.0.0.1.",
                      "127..0.1", "127.0.0.0001", "127.0.0.-1", "128.0.0.1", "0.0.0.0", "10.127.0.1",
                      "localhost.example", "::2", "", "127.0.0.1 "])
    func notLoopback(_ host: String) {
        #expect(!LoopbackHost.contains(host))
    }
}
