import SecurOTPCore

/// What every backend accepts as a user name and a token nickname.
public enum InputRules {
    /// Unix user names as NSS hands them over: no empty names, separators or control characters.
    public static func validate(user: String) throws(StoreError) {
        let bytes = Array(user.utf8)
        guard !bytes.isEmpty, bytes.count <= 256, bytes.first != UInt8(ascii: "-"),
              !bytes.contains(where: { $0 < 0x21 || $0 == 0x7f || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") }),
              TerminalText.isSafe(user)
        else {
            // Never the raw name: it may be megabytes of terminal escapes (TerminalText).
            throw StoreError(.invalidInput, "\"\(TerminalText.excerpt(user))\" (\(bytes.count) bytes) is not a valid user name")
        }
        // "@NAME" is group NAME's policy (Store.policySubject(group:)): a user so named would
        // share it.
        guard bytes.first != UInt8(ascii: "@") else {
            throw StoreError(.invalidInput, "\"\(TerminalText.excerpt(user))\" is not a valid user name: a leading @ names a group (securotp policy @GROUP)")
        }
    }

    public static func validate(nickname: String) throws(StoreError) {
        guard nickname.count <= 32 else { throw StoreError(.invalidInput, "nickname is \(nickname.count) characters; at most 32 are allowed") }
        guard !nickname.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
            throw StoreError(.invalidInput, "nickname contains control characters")
        }
    }
}
