/// Where the database, key file and configuration live. A state directory (for tests and
/// demos: `--state-dir`, `SECUROTP_STATE_DIR`, module argument `state_dir=`) holds all three.
public struct StorePaths: Sendable, Equatable {
    public static let defaultDatabase = "/var/lib/securotp/securotp.db"
    public static let defaultKeyFile = "/etc/securotp/securotp.key"
    public static let defaultConfig = "/etc/securotp/securotp.conf"

    public var database: String
    public var keyFile: String
    public var config: String
    public var stateDirectory: String?

    public init(stateDirectory: String? = nil) {
        self.stateDirectory = stateDirectory
        if let directory = stateDirectory {
            database = directory + "/securotp.db"
            keyFile = directory + "/securotp.key"
            config = directory + "/securotp.conf"
        } else {
            database = Self.defaultDatabase
            keyFile = Self.defaultKeyFile
            config = Self.defaultConfig
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
