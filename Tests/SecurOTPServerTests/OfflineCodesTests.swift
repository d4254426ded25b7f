import Foundation
import Hummingbird
import SecurOTPCore
import SecurOTPService
import SecurOTPStore
import Testing

/// Offline codes, the validator's half: hashes of a host's coming HOTP codes, reserved for it.
@Suite("Validator API: offline codes for hosts")
struct OfflineCodesTests {
    @Test("A host with offline codes gets hashes of the next codes, reserved to it; used ones are withdrawn; refills add what it lacks",
          arguments: Backend.tested)
    func reservations(backend: Backend) async throws {
        let fixture = try await ValidatorFixture.make(backend)
        try await fixture.withClient { client in
            let created = try await client.call(.post, "/v1/hosts", ["name": "laptop", "offline_codes": 4], bearer: fixture.admin)
            let laptop = try #require(created.string("credential"), "\(created.text)")
            let pepper = try #require(Credential(text: laptop)).secretHash
            let (secret, serial) = try await HostAPITests.enroll(client, fixture, "alice", ["kind": "hotp"])

            // Online login with counter 0: codes 1–4 come back, hashed for this host only.
            let first = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 0)], bearer: laptop)
            #expect(first.string("result") == "accept", "\(first.text)")
            let offline = try #require((first["offline"] as? [[String: Any]])?.first, "\(first.text)")
            #expect(offline["serial"] as? String == serial && offline["first_valid"] as? Int == 1)
            let codes = try #require(offline["codes"] as? [[String: Any]])
            #expect(codes.compactMap { $0["counter"] as? Int } == [1, 2, 3, 4])
            let iterations = try #require(offline["iterations"] as? Int)
            for entry in codes {
                let counter = UInt64(try #require(entry["counter"] as? Int))
                let hash = OfflineCodeHash(counter: Int64(counter), salt: Hex.decode(try #require(entry["salt"] as? String)) ?? [],
                                           hash: Hex.decode(try #require(entry["hash"] as? String)) ?? [])
                let right = Array(Codes.hotp(secret, counter: counter).utf8)
                #expect(right.withUnsafeBufferPointer { hash.matches($0, pepper: pepper, iterations: iterations) })
                let other = Array(Codes.hotp(secret, counter: counter + 10).utf8)
                #expect(!other.withUnsafeBufferPointer { hash.matches($0, pepper: pepper, iterations: iterations) })
                #expect(!right.withUnsafeBufferPointer { hash.matches($0, pepper: Array(repeating: 0, count: 32), iterations: iterations) },
                        "the hashes are keyed to this host's credential")
            }
            #expect(!first.text.contains(secret), "never the seed")

            // Reserved codes belong to the laptop: another host cannot use them.
            let elsewhere = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 1)], bearer: fixture.host)
            #expect(elsewhere.string("result") == "reject", "\(elsewhere.text)")

            // The laptop used codes 1 and 2 offline; online, code 3 is accepted, and it again holds
            // four codes ahead (4–7): only 5–7 are new.
            let online = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 3),
                                                                     "offline_used": [["serial": serial, "next_unused": 3]]], bearer: laptop)
            #expect(online.string("result") == "accept", "\(online.text)")
            let refill = try #require((online["offline"] as? [[String: Any]])?.first, "\(online.text)")
            #expect(refill["first_valid"] as? Int == 4 && (refill["codes"] as? [[String: Any]])?.compactMap { $0["counter"] as? Int } == [5, 6, 7],
                    "\(online.text)")
            let usedOffline = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 2)], bearer: laptop)
            #expect(usedOffline.string("result") == "reject", "a code used offline is never accepted online: \(usedOffline.text)")

            // Other hosts continue after the reservation.
            let reserved = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 6)], bearer: fixture.host)
            #expect(reserved.string("result") == "reject", "\(reserved.text)")
            let after = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 8)], bearer: fixture.host)
            #expect(after.string("result") == "accept", "\(after.text)")
            #expect(after["offline"] == nil, "only hosts with offline codes get them")

            // Deleting the user's tokens drops the reservations.
            try await client.call(.delete, "/v1/users/alice/tokens", bearer: fixture.admin)
            let gone = try await client.call(.post, "/v1/verify", ["user": "alice", "passcode": Codes.hotp(secret, counter: 4)], bearer: laptop)
            #expect(gone.string("result") == "reject")
        }
    }

    @Test("TOTP and PIN tokens get no offline codes")
    func onlyPlainHOTP() async throws {
        let fixture = try await ValidatorFixture.make()
        try await fixture.withClient { client in
            let created = try await client.call(.post, "/v1/hosts", ["name": "laptop", "offline_codes": 4], bearer: fixture.admin)
            let laptop = try #require(created.string("credential"))
            let (secret, _) = try await HostAPITests.enroll(client, fixture, "bob")
            let accepted = try await client.call(.post, "/v1/verify", ["user": "bob", "passcode": Codes.totp(secret)], bearer: laptop)
            #expect(accepted.string("result") == "accept" && accepted["offline"] == nil, "\(accepted.text)")
        }
    }
}
