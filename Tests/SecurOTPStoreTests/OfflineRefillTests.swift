import SecurOTPCore
import SecurOTPStore
import Testing

@Suite("Offline codes: refill plans and host-keyed hashes")
struct OfflineRefillTests {
    @Test("A first login reserves the next N codes and moves the counter past them")
    func first() {
        let plan = OfflineRefill.plan(accepted: 0, previous: nil, counter: 1, count: 4, serial: "s")
        #expect(plan == OfflineRefill(reservation: OfflineReservation(serial: "s", first: 1, last: 4), newPositions: 1...4, counter: 5))
    }

    @Test("A reserved code used online: the host keeps N ahead and only the missing codes are new")
    func withinReservation() {
        let plan = OfflineRefill.plan(accepted: 3, previous: OfflineReservation(serial: "s", first: 3, last: 4), counter: 5, count: 4, serial: "s")
        #expect(plan == OfflineRefill(reservation: OfflineReservation(serial: "s", first: 4, last: 7), newPositions: 5...7, counter: 8))
    }

    @Test("An acceptance past an old reservation replaces it; nothing new when the host already holds enough")
    func pastAndFull() {
        let past = OfflineRefill.plan(accepted: 20, previous: OfflineReservation(serial: "s", first: 5, last: 9), counter: 21, count: 2, serial: "s")
        #expect(past == OfflineRefill(reservation: OfflineReservation(serial: "s", first: 21, last: 22), newPositions: 21...22, counter: 23))
        let full = OfflineRefill.plan(accepted: 3, previous: OfflineReservation(serial: "s", first: 3, last: 10), counter: 11, count: 2, serial: "s")
        #expect(full?.newPositions == nil && full?.counter == 11 && full?.reservation.last == 10)
        #expect(OfflineRefill.plan(accepted: 3, previous: nil, counter: 4, count: 0, serial: "s") == nil)
    }

    @Test("A code's hash matches only that code, with that salt, pepper and iteration count")
    func hashes() throws {
        let code = Array("123456".utf8), salt = Array(repeating: UInt8(7), count: 16), pepper = Array(repeating: UInt8(9), count: 32)
        let hash = try #require(code.withUnsafeBufferPointer { OfflineCodeHash.derive(code: $0, salt: salt, pepper: pepper, iterations: 1000) })
        let stored = OfflineCodeHash(counter: 1, salt: salt, hash: hash)
        #expect(code.withUnsafeBufferPointer { stored.matches($0, pepper: pepper, iterations: 1000) })
        #expect(!Array("123457".utf8).withUnsafeBufferPointer { stored.matches($0, pepper: pepper, iterations: 1000) })
        #expect(!code.withUnsafeBufferPointer { stored.matches($0, pepper: [], iterations: 1000) })
        #expect(!code.withUnsafeBufferPointer { stored.matches($0, pepper: pepper, iterations: 1001) })
        #expect(code.withUnsafeBufferPointer { OfflineCodeHash.derive(code: $0, salt: salt, pepper: pepper, iterations: 10) } == nil)
    }
}
