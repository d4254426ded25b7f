// The software FIDO2 key is real enough for what the FIDO tests build on: unmodified libfido2
// programs see it, Debian's pamu2fcfg enrolls with it, and Debian's pam_u2f.so, loaded by the
// real libpam, authenticates with it — and refuses when the touch is refused, the key is
// another one, or the PIN is wrong. Its counter persists, and a restored state file is a clone.
import Foundation
import Testing

@Suite("softfido: the test-only FIDO2 key against libfido2, pamu2fcfg and pam_u2f", .serialized)
struct SoftFIDOTests {
    /// Writes `auth required pam_u2f.so authfile=FILE ARGS...` as service NAME.
    private func u2fService(_ box: Sandbox, _ name: String, authfile: String, _ arguments: [String] = ["cue"]) throws -> String {
        let line = (["auth", "required", try SoftFIDO.pamU2F(), "authfile=" + authfile] + arguments).joined(separator: " ")
        try box.write(line + "\n", to: box.pamDirectory + "/" + name)
        return name
    }

    /// Enrolls the current user with pamu2fcfg and writes the line as an authfile.
    private func enroll(_ box: Sandbox, _ key: SoftKey, file: String = "u2f_keys", _ arguments: [String] = [],
                        pin: String? = nil) throws -> (authfile: String, credential: U2FCredential) {
        let result = try key.pamu2fcfg(SoftFIDO.currentUser, arguments, pinAnswer: pin)
        try #require(result.status == 0, "\(result)")
        let line = try #require(result.lines.first { $0.hasPrefix(SoftFIDO.currentUser + ":") }, "\(result)")
        let parsed = try U2FCredential.parse(line: line)
        try #require(parsed.credentials.count == 1, "\(line)")
        let authfile = box.path(file)
        try box.write(line + "\n", to: authfile, mode: 0o600)
        return (authfile, parsed.credentials[0])
    }

    @Test("fido2-token -L lists softfido:0 only where SOFTFIDO_STATE names a key, as a CTAP2 device")
    func listed() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let token = try SoftFIDO.fido2Token()
        let listed = try key.run(token, ["-L"])
        #expect(listed.status == 0, "\(listed)")
        #expect(listed.lines.contains { $0.hasPrefix("softfido:0:") }, "\(listed)")

        let idle = try key.run(token, ["-L"], extra: ["SOFTFIDO_STATE": ""])
        #expect(!idle.stdout.contains("softfido"), "the interposer must stay idle without a state file: \(idle)")

        // A malformed GetInfo makes libfido2 fall back to U2F silently: check it took CBOR.
        let info = try key.run(token, ["-I", "softfido:0"])
        #expect(info.status == 0, "\(info)")
        #expect(info.stdout.contains("version strings: FIDO_2_0"), "\(info)")
        #expect(info.lines.contains { $0.hasPrefix("caps:") && $0.contains("cbor") }, "\(info)")
        #expect(info.lines.contains("options: rk, up, noplat, noclientPin"), "\(info)")
        let withPIN = try key.withPIN("4321").run(token, ["-I", "softfido:0"])
        #expect(withPIN.lines.contains("options: rk, up, noplat, clientPin"), "\(withPIN)")
    }

    @Test("pamu2fcfg enrolls (x5c attestation checked by it): an ES256 line with a 64-byte key; the counter persists")
    func pamu2fcfgEnrolls() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let (_, credential) = try enroll(box, key)
        #expect(credential.type == "es256")
        #expect(credential.attributes == "+presence")
        #expect(Data(base64Encoded: credential.publicKey)?.count == 64, "raw x||y: \(credential.publicKey)")
        #expect(Data(base64Encoded: credential.keyHandle)?.isEmpty == false)
        #expect(try key.storedCounter() == 1)

        let refused = try key.refusing().pamu2fcfg(SoftFIDO.currentUser)
        #expect(refused.status != 0, "no touch, no credential: \(refused)")
        #expect(try key.storedCounter() == 1)
    }

    @Test("Debian's pam_u2f.so through the real libpam: touch logs in; refused touch and a foreign key fail")
    func pamU2FAuthenticates() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let (authfile, _) = try enroll(box, key)
        let service = try u2fService(box, "u2f", authfile: authfile)
        let user = SoftFIDO.currentUser

        let login = try key.login(box, service, user)
        #expect(login.status == PAM.success, "\(login)")
        #expect(login.infos == ["Please touch the device."], "\(login)")
        let counterAfterLogin = try key.storedCounter()
        #expect(counterAfterLogin > 1, "every signature counts")

        let refused = try key.refusing().login(box, service, user)
        #expect(refused.status == PAM.authError, "\(refused)")

        let foreign = SoftKey(box, name: "other.state")
        let stranger = try foreign.login(box, service, user)
        #expect(stranger.status == PAM.authError, "another key must not log in: \(stranger)")

        #expect(try key.login(box, service, user).status == PAM.success, "still works afterwards")
    }

    @Test("RS256: pamu2fcfg -t rs256 makes a 259-byte n||e key (x5c checked); pam_u2f logs in with it, not with the key altered")
    func rs256WithPamU2F() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let (authfile, credential) = try enroll(box, key, ["-t", "rs256"])
        #expect(credential.type == "rs256")
        let publicKey = try #require(Data(base64Encoded: credential.publicKey))
        #expect(publicKey.count == 259 && publicKey.suffix(3) == Data([1, 0, 1]), "n (256 bytes) || e (65537): \(publicKey.count)")
        let service = try u2fService(box, "u2f-rs256", authfile: authfile)
        let user = SoftFIDO.currentUser
        let login = try key.login(box, service, user)
        #expect(login.status == PAM.success, "\(login)")
        #expect(try key.refusing().login(box, service, user).status == PAM.authError)

        var altered = [UInt8](publicKey)
        altered[100] ^= 0x01
        let line = "\(user):\(credential.keyHandle),\(Data(altered).base64EncodedString()),rs256,\(credential.attributes)"
        try box.write(line + "\n", to: authfile, mode: 0o600)
        let tampered = try key.login(box, service, user)
        #expect(tampered.status == PAM.authError, "an altered modulus does not verify: \(tampered)")
    }

    @Test("PIN: pamu2fcfg -N enrolls with the PIN; pam_u2f logs in with the right PIN, not with a wrong one")
    func pinRequiredAndWrong() throws {
        let box = try Sandbox()
        let key = SoftKey(box).withPIN("1234")
        let withoutPIN = try key.pamu2fcfg(SoftFIDO.currentUser)
        #expect(withoutPIN.status != 0, "a key with a PIN refuses makeCredential without it: \(withoutPIN)")

        let (authfile, credential) = try enroll(box, key, ["-N"], pin: "1234")
        #expect(credential.attributes == "+presence+pin")
        let service = try u2fService(box, "u2f-pin", authfile: authfile)
        let user = SoftFIDO.currentUser

        let right = try key.login(box, service, user, ["1234"])
        #expect(right.status == PAM.success, "\(right)")
        #expect(right.prompts == ["Please enter the PIN: "], "\(right)")

        let wrong = try key.login(box, service, user, ["9999"])
        #expect(wrong.status == PAM.authError, "\(wrong)")
        let text = try String(contentsOfFile: key.state, encoding: .utf8)
        #expect(text.contains("pin-retries 7"), "a wrong PIN costs a retry:\n\(text)")
    }

    @Test("The signature counter rises with every assertion, survives processes, and a restored state file goes back")
    func counterPersistsAndClones() throws {
        let box = try Sandbox()
        let key = SoftKey(box)
        let (_, credential) = try enroll(box, key)
        let origin = SoftFIDO.defaultOrigin
        let first = try key.assertionCounter(credentialID: credential.keyHandle, origin: origin, box: box)
        let saved = try String(contentsOfFile: key.state, encoding: .utf8)
        let second = try key.assertionCounter(credentialID: credential.keyHandle, origin: origin, box: box)
        #expect(second > first, "\(first) then \(second)")

        try box.write(saved, to: key.state, mode: 0o600)
        let cloned = try key.assertionCounter(credentialID: credential.keyHandle, origin: origin, box: box)
        #expect(cloned <= second, "the restored key repeats a counter already seen: \(cloned) after \(second)")
        #expect(cloned == second, "restoring reproduces exactly the old key")
    }

    @Test("No product links the soft key: it is built apart (make softfido) and no product names it")
    func neverInAProduct() throws {
        let package = try String(contentsOfFile: Binaries.packageRoot + "/Package.swift", encoding: .utf8)
        #expect(!package.lowercased().contains("softfido"), "Package.swift must not build or link softfido")
        let embedded = try String(contentsOfFile: Binaries.packageRoot + "/pam/embedded/build.sh", encoding: .utf8)
        #expect(!embedded.lowercased().contains("softfido"))
        var products = ["securotp", "securotpd", "securotp-authenticator", "libpam_securotp.so"].map { Binaries.directory + "/" + $0 }
        products.append(try Binaries.module())
        for product in products where FileManager.default.fileExists(atPath: product) {
            let readelf = try Run.run("/usr/bin/readelf", ["-d", product])
            #expect(readelf.status == 0, "\(readelf)")
            #expect(!readelf.stdout.lowercased().contains("softfido"), "\(product) links softfido")
            let strings = try Run.run("/usr/bin/strings", [product])
            #expect(!strings.stdout.contains("SOFTFIDO_"), "\(product) contains softfido code")
        }
    }
}
