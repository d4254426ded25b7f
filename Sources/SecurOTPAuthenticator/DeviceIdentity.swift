import Foundation
import Glibc

/// Who opens the store, and on which machine: the effective uid and the machine ID
/// (/etc/machine-id, else /var/lib/dbus/machine-id). With the random key file they make the
/// store's keys (DeviceKeys), so a copied store does not open for another user or elsewhere.
///
/// The machine ID is not a secret (any local user can read it): the binding stops a store that
/// was copied as it is, like the SecurID SDK's device binding, not someone who also copies the
/// machine ID and runs under the same uid (docs/authenticator.md).
public struct DeviceIdentity: Sendable, Equatable {
    public static let machineIDFiles = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
    /// Names the file to read the machine ID from instead, so tests can play "another machine".
    /// It weakens nothing: whoever can set it could also present any machine ID they know.
    public static let machineIDFileVariable = "SECUROTP_MACHINE_ID_FILE"

    public var uid: UInt32
    /// 32 lowercase hex digits.
    public var machineID: String

    public init(uid: UInt32, machineID: String) {
        self.uid = uid
        self.machineID = machineID
    }

    /// This process's identity: geteuid() and the machine ID from the first file that holds one.
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) throws(AuthenticatorError) -> DeviceIdentity {
        let files = environment[machineIDFileVariable].flatMap { $0.isEmpty ? nil : [$0] } ?? machineIDFiles
        for file in files {
            if let id = machineID(at: file) { return DeviceIdentity(uid: geteuid(), machineID: id) }
        }
        throw AuthenticatorError(.missing, "no machine ID in \(files.joined(separator: " or ")); the store is bound to this machine's ID, "
            + "so it cannot be opened without one (create it with: systemd-machine-id-setup, as root)")
    }

    /// The machine ID in a file: 32 hex digits, then optional whitespace (machine-id(5)); nil
    /// for a missing or empty file, "uninitialized", or anything else.
    static func machineID(at path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 128) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard text.utf8.count == 32, text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return text
    }
}
