import COpenSSL

/// Comparisons whose running time does not depend on where two inputs first differ.
public enum ConstantTime {
    public static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == 0 }
        return securotp_equal(pa, pb, a.count) == 1
    }

    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in equal(pa, pb) } }
    }
}
