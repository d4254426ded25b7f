import SecurOTPCore

extension U2FMappingFile {
    /// Largest mapping file read: a few hundred bytes per user, thousands of users.
    public static let maxFileSize = 4 * 1024 * 1024

    /// Reads a mapping file under the rules for policy files (FileSecurity): absolute path, no
    /// symbolic link, a regular file owned by root (or the caller), not writable by others —
    /// whoever can write it can add a key for any user. The bytes as they are: pam_u2f reads
    /// them byte-wise, and a byte that is not UTF-8 touches only its own line.
    public static func read(_ path: String) throws(StoreError) -> [UInt8] {
        try FileSecurity.contents(of: path, .policy, maxSize: maxFileSize)
    }
}
