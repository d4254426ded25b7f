import Foundation
import Testing
@testable import SecurOTPEngine
@testable import SecurOTPStore

@Suite struct ValidatorSettingsTests {
    @Test(arguments: [
        ("https://otp.example.com:8443", ValidatorAddress.https(host: "otp.example.com", port: 8443)),
        ("https://otp.example.com", .https(host: "otp.example.com", port: 443)),
        ("https://10.1.2.3:8443/", .https(host: "10.1.2.3", port: 8443)),
        ("https://[2001:db8::1]:8443", .https(host: "[2001:db8::1]", port: 8443)),
        ("http://127.0.0.1:8080", .http(host: "127.0.0.1", port: 8080)),
        ("http://127.9.8.7:1", .http(host: "127.9.8.7", port: 1)),
        ("http://localhost:8080", .http(host: "localhost", port: 8080)),
        ("http://[::1]:8080", .http(host: "[::1]", port: 8080)),
        ("unix:/run/securotp/securotpd.sock", .unix(path: "/run/securotp/securotpd.sock")),
    ])
    func acceptedAddresses(text: String, expected: ValidatorAddress) {
        #expect(ValidatorAddress(parsing: text) == expected)
    }

    @Test(arguments: [
        "http://10.0.0.1:8080",              // plain HTTP off loopback
        "http://127.0.0.1.evil.example:80",  // looks like loopback, is a name
        "http://127.1:80", "http://128.0.0.1:80", "http://127.0.0.256:80",
        "https://user@otp.example.com", "https://otp.example.com/v1", "https://otp.example.com?x=1",
        "https://otp.example.com:0", "https://otp.example.com:65536", "https://otp.example.com:", "https://otp.example.com:+80",
        "https://", "https://ot p.example.com", "ftp://otp.example.com", "otp.example.com:8443",
        "https://[::1", "https://[nothex]:1", "unix:relative.sock", "unix:/with space",
    ])
    func refusedAddresses(text: String) {
        #expect(ValidatorAddress(parsing: text) == nil, "\(text)")
    }

    @Test func urlsForCHTTP() {
        #expect(ValidatorAddress.https(host: "[::1]", port: 8443).url("/v1/verify") == "https://[::1]:8443/v1/verify")
        #expect(ValidatorAddress.unix(path: "/run/s.sock").url("/v1/verify") == "unix:/run/s.sock /v1/verify")
    }

    @Test func keysFromFileAndArguments() throws {
        var settings = Settings()
        try settings.apply(fileText: """
            validator = https://otp.example.com:8443
            host_credential = /etc/securotp/host.cred
            ca_file = /etc/securotp/ca.pem
            timeout = 5
            failmode = safe
            """, path: "/etc/x.conf")
        #expect(settings.remote.address == .https(host: "otp.example.com", port: 8443))
        #expect(settings.remote.hostCredential == "/etc/securotp/host.cred" && settings.remote.caFile == "/etc/securotp/ca.pem")
        #expect(settings.remote.timeout == 5 && settings.remote.failMode == .safe)
        try settings.remote.validate()
        try settings.apply(key: "failmode", value: "secure", origin: .argument)
        #expect(settings.remote.failMode == .secure)
        #expect(Settings().remote == ValidatorSettings() && !Settings().remote.isEnabled)
        #expect(ValidatorSettings().failMode == .secure && ValidatorSettings().timeout == 10, "defaults: deny, 10 s")
    }

    @Test(arguments: [
        ("timeout = 0", "/etc/x.conf:1: timeout: expected a whole number 1–60"),
        ("timeout = 61", "/etc/x.conf:1: timeout: expected a whole number 1–60"),
        ("failmode = open", "/etc/x.conf:1: failmode: expected secure or safe"),
        ("validator = http://192.0.2.1:8080", "/etc/x.conf:1: validator: expected https://HOST:PORT"),
        ("host_credential = host.cred", "/etc/x.conf:1: host_credential: expected an absolute path"),
        ("client_key = key.pem", "/etc/x.conf:1: client_key: expected an absolute path"),
    ])
    func badValues(text: String, expected: String) {
        var settings = Settings()
        #expect {
            try settings.apply(fileText: text, path: "/etc/x.conf")
        } throws: { error in
            (error as? StoreError).map { $0.code == .config && $0.message.hasPrefix(expected) } ?? false
        }
    }

    @Test(arguments: [
        (["validator=https://v.example:8443"], "validator needs host_credential"),
        (["ca_file=/etc/ca.pem"], "ca_file is set but validator is not"),
        (["host_credential=/etc/h.cred"], "host_credential is set but validator is not"),
        (["validator=https://v.example:8443", "host_credential=/etc/h.cred", "client_cert=/etc/c.pem"], "client_cert and client_key go together"),
    ])
    func incompleteCombinations(arguments: [String], expected: String) throws {
        let temp = try TemporaryStore()
        #expect {
            try Settings.fromModuleArguments(arguments + ["state_dir=\(temp.directory)"])
        } throws: { error in
            (error as? StoreError).map { $0.code == .config && $0.message.hasPrefix(expected) } ?? false
        }
    }

    @Test func completeRemoteArguments() throws {
        let temp = try TemporaryStore()
        let settings = try Settings.fromModuleArguments(["state_dir=\(temp.directory)", "validator=unix:/run/s.sock", "host_credential=/etc/h.cred",
                                                         "client_cert=/etc/c.pem", "client_key=/etc/c.key", "timeout=3"])
        #expect(settings.remote.isEnabled && settings.remote.address == .unix(path: "/run/s.sock") && settings.remote.timeout == 3)
        #expect(settings.remote.clientCertificate == "/etc/c.pem" && settings.remote.clientKey == "/etc/c.key")
    }

    @Test("Push options: push_timeout (5–300, default 60), device_ca (absolute path), device_uv (required|optional)")
    func pushOptions() throws {
        let temp = try TemporaryStore()
        let remote = ["state_dir=\(temp.directory)", "validator=https://v.example:8443", "host_credential=/etc/h.cred"]
        let defaults = try Settings.fromModuleArguments(remote)
        #expect(defaults.remote.pushTimeout == 60 && defaults.remote.deviceCA == nil && defaults.remote.deviceUserVerification == .optional)
        let set = try Settings.fromModuleArguments(remote + ["push_timeout=30", "device_ca=/etc/securotp/device-ca.pem", "device_uv=required"])
        #expect(set.remote.pushTimeout == 30 && set.remote.deviceCA == "/etc/securotp/device-ca.pem" && set.remote.deviceUserVerification == .required)
        for bad in ["push_timeout=4", "push_timeout=301", "push_timeout=soon", "device_ca=relative.pem", "device_uv=yes"] {
            #expect(throws: StoreError.self, "\(bad)") { try Settings.fromModuleArguments(remote + [bad]) }
        }
        // Without validator= they mean nothing: an error naming the key, not silence.
        for stray in ["push_timeout=30", "device_ca=/etc/ca.pem", "device_uv=required", "push_offline=allow", "push_web=deny", "web_origin=https://v.example"] {
            #expect {
                try Settings.fromModuleArguments(["state_dir=\(temp.directory)", stray])
            } throws: { error in
                (error as? StoreError).map { $0.message.hasPrefix(String(stray.prefix { $0 != "=" }) + " is set but validator is not") } ?? false
            }
        }
    }

    @Test("Device certificate options: device_revoked (absolute path), device_cert_expiry (required|optional, default optional); remote mode only")
    func certificateOptions() throws {
        let temp = try TemporaryStore()
        let remote = ["state_dir=\(temp.directory)", "validator=https://v.example:8443", "host_credential=/etc/h.cred"]
        let defaults = try Settings.fromModuleArguments(remote)
        #expect(defaults.remote.deviceRevoked == nil && defaults.remote.deviceCertificateExpiry == .optional)
        let set = try Settings.fromModuleArguments(remote + ["device_revoked=/etc/securotp/device-revoked", "device_cert_expiry=required"])
        #expect(set.remote.deviceRevoked == "/etc/securotp/device-revoked" && set.remote.deviceCertificateExpiry == .required)
        for bad in ["device_revoked=relative", "device_cert_expiry=yes"] {
            #expect(throws: StoreError.self, "\(bad)") { try Settings.fromModuleArguments(remote + [bad]) }
        }
        for stray in ["device_revoked=/etc/r", "device_cert_expiry=required"] {
            #expect {
                try Settings.fromModuleArguments(["state_dir=\(temp.directory)", stray])
            } throws: { error in
                (error as? StoreError).map { $0.message.hasPrefix(String(stray.prefix { $0 != "=" }) + " is set but validator is not") } ?? false
            }
        }
    }

    @Test("validator_may: approve (default) or deny-only; deny-only needs device_ca and refuses push_offline/push_web=allow; nothing without validator=")
    func validatorMay() throws {
        let temp = try TemporaryStore()
        let remote = ["state_dir=\(temp.directory)", "validator=https://v.example:8443", "host_credential=/etc/h.cred"]
        #expect(try Settings.fromModuleArguments(remote).remote.validatorMay == .approve)
        let strict = try Settings.fromModuleArguments(remote + ["device_ca=/etc/securotp/device-ca.pem", "validator_may=deny-only"])
        #expect(strict.remote.validatorMay == .denyOnly)
        #expect(ValidatorMay.denyOnly.allows(.push) && !ValidatorMay.denyOnly.allows(.otp) && !ValidatorMay.denyOnly.allows(.fido))
        #expect(LoginMethod.allCases.allSatisfy { ValidatorMay.approve.allows($0) })
        let refusals: [([String], String)] = [
            (["validator_may=deny-only"], "validator_may=deny-only needs device_ca=FILE"),
            (["validator_may=deny-only", "device_ca=/etc/ca.pem", "push_web=allow"], "validator_may=deny-only cannot go with"),
            (["validator_may=deny-only", "device_ca=/etc/ca.pem", "push_offline=allow"], "validator_may=deny-only cannot go with"),
            (["validator_may=deny"], "module argument validator_may: expected approve or deny-only"),
            (["validator_may=deny-only", "device_ca=/etc/ca.pem", "nullok"], "validator_may=deny-only cannot go with nullok"),
            (["validator_may=deny-only", "device_ca=/etc/ca.pem", "failmode=safe"], "validator_may=deny-only cannot go with failmode=safe"),
        ]
        for (arguments, expected) in refusals {
            #expect {
                try Settings.fromModuleArguments(remote + arguments)
            } throws: { error in
                (error as? StoreError).map { $0.code == .config && $0.message.contains(expected) } ?? false
            }
        }
        #expect {
            try Settings.fromModuleArguments(["state_dir=\(temp.directory)", "validator_may=deny-only"])
        } throws: { error in
            (error as? StoreError).map { $0.message.hasPrefix("validator_may is set but validator is not") } ?? false
        }
    }

    @Test("The validator's order only narrows the host's: the host's order when set there, else the validator's; nil when none is shared")
    func methodsBounded() throws {
        let host = try #require(LoginMethods(parsing: "push"))
        #expect(host.bounding(try #require(LoginMethods(parsing: "otp"))) == nil)
        #expect(host.bounding(try #require(LoginMethods(parsing: "otp,push")))?.order == [.push])
        let ordered = try #require(LoginMethods(parsing: "push,otp"))
        #expect(ordered.bounding(try #require(LoginMethods(parsing: "otp,push,fido")))?.order == [.push, .otp], "the host's order")
        #expect(LoginMethods.standard.bounding(try #require(LoginMethods(parsing: "otp,push")))?.order == [.otp, .push], "the validator's order")
        #expect(LoginMethods.standard.keeping { ValidatorMay.denyOnly.allows($0) }?.order == [.push])
        #expect(try #require(LoginMethods(parsing: "otp")).keeping { ValidatorMay.denyOnly.allows($0) } == nil)
    }
}
