/// The lines of a text file the project reads (securotp.conf and the other `key = value`
/// files, import-batch lists, the sshd and PAM files `securotp doctor` reads): a line ends at
/// `\n` or at `\r\n` (a file saved with Windows line ends), so a carriage return never becomes
/// part of a key, a value or a user name. Swift's Character "\n" is not "\r\n" (one grapheme),
/// so `split(separator: "\n")` reads a CRLF file as one line; every such reader uses this.
/// pam_u2f's mapping files are read byte-wise as pam_u2f reads them instead (U2FMappingFile).
public enum TextLines {
    public static func split(_ text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
    }
}
