/// Plain HTTP is allowed only on the loopback interface, where nobody else can listen in. One rule
/// for the validator's listener, the module's `validator=`, the authenticator's `--server` and the
/// wake-up hook URL: `localhost`, `::1` (bracketed or not) and dotted IPv4 literals in 127.0.0.0/8.
/// "127.0.0.1.example.com" or "127.evil" are names that DNS may point anywhere: not loopback.
public enum LoopbackHost {
    public static func contains(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0].elementsEqual("127".utf8) else { return false }
        return octets.allSatisfy(isOctet)
    }

    private static func isOctet(_ digits: Substring.UTF8View.SubSequence) -> Bool {
        guard (1...3).contains(digits.count) else { return false }
        var value = 0
        for byte in digits {
            guard byte >= 0x30 && byte <= 0x39 else { return false }
            value = value * 10 + Int(byte - 0x30)
        }
        return value <= 255
    }
}
