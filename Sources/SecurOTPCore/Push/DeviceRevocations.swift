/// `device_revoked=` (docs/push.md, "Device certificates"): the admin's list of devices whose
/// certificates a host no longer honours — removed, lost or stolen — so that a device's
/// certified key stops working on the hosts at once, whatever the validator says. One device
/// id (`dv` and 16 lowercase hex digits) per line; `#` starts a comment; blank lines are
/// ignored. Any other line makes the whole file unusable (a host then offers no push), so a
/// typo never silently un-revokes a device. Foundation-free and trap-free (the module links it).
public struct DeviceRevocations: Sendable, Equatable {
    /// The ids listed, in file order.
    public let devices: [String]
    /// A file of device ids is small; anything much larger is not one.
    public static let maxSize = 256 * 1024

    /// The line (from 1) that is neither blank, a comment nor a device id.
    public struct BadLine: Error, Equatable {
        public let line: Int

        public init(line: Int) { self.line = line }
    }

    public init(devices: [String] = []) { self.devices = devices }

    public init(parsing bytes: [UInt8]) throws(BadLine) {
        var devices: [String] = []
        var number = 0
        for raw in bytes.split(separator: 0x0a, omittingEmptySubsequences: false) {
            number += 1
            var line = raw[...]
            if let hash = line.firstIndex(of: UInt8(ascii: "#")) { line = line[line.startIndex..<hash] }
            while let first = line.first, first == 0x20 || first == 0x09 { line = line.dropFirst() }
            while let last = line.last, last == 0x20 || last == 0x09 || last == 0x0d { line = line.dropLast() }
            if line.isEmpty { continue }
            guard Self.isDeviceID(line) else { throw BadLine(line: number) }
            devices.append(String(decoding: line, as: UTF8.self))
        }
        self.devices = devices
    }

    public func contains(_ device: String) -> Bool { devices.contains(device) }

    static func isDeviceID(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count == 18, bytes.starts(with: [UInt8(ascii: "d"), UInt8(ascii: "v")]) else { return false }
        return bytes.dropFirst(2).allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
