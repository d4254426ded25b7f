import SecurOTPStore

/// What every backend checks of a request before it touches the store.
public enum RequestRules {
    /// Unix user names as NSS hands them over (InputRules).
    public static func user(_ user: String) throws(ServiceError) -> String {
        do throws(StoreError) { try InputRules.validate(user: user) } catch { throw ServiceError(error) }
        return user
    }

    /// Passcodes, PINs and answers: at most 1 KiB (codes are 6–8 digits; forward_pass adds a password).
    public static func passcode(_ passcode: String) throws(ServiceError) -> [UInt8] {
        let bytes = Array(passcode.utf8)
        guard bytes.count <= 1024 else { throw ServiceError(.invalidInput, "passcode longer than 1024 bytes") }
        return bytes
    }
}
