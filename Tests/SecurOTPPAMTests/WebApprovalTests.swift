import SecurOTPCore
@testable import SecurOTPPAM
@testable import SecurOTPStore
import Testing

/// A phone's passkey approvals (`FFFF#0002`, docs/push.md "Phones without an app") as the host
/// checks them. The vectors were made with Python's `cryptography` (an independent signer):
/// a P-256 key, the statement of the request below with number 492817, client data of type
/// webauthn.get at the origin shown, authenticator data with UV set ("good", "elsewhere") or
/// clear ("nouv").
@Suite("Push approval: phones' passkeys on the host")
struct WebApprovalTests {
    static let good = #"{"device": "dv0123456789abcdef", "aaid": "FFFF#0002", "public_key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyPx0GgOkmMqZi0UBaSHHh_ntUcBe7f088qXLw6J3wrItNmgkBkbT2Ni8qEqzul7SuZhs_pk7xK1w0R_kD96xgQ", "authenticator_data": "qDtPFnfLoc99F2lGN__-H1IH5-fHAu8WpmVVUVwr07AFAAAAAQ", "client_data_json": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiTWxsZ2I2YzBfSDJVYnI1bWFjRW8zcHg3VDg2dnlhWnlrYnBhQzdBcUVybyIsIm9yaWdpbiI6Imh0dHBzOi8vb3RwLmV4YW1wbGUuY29tIiwiY3Jvc3NPcmlnaW4iOmZhbHNlfQ", "signature": "MEQCIHGe8yS6GYqeGIS3jiG042I3h69FjAd7-rxH9C76R29aAiB3nmxA74O9TFmW1YiLf4gylkn4TX17WsGCFJxJDeI2dw", "origin": "https://otp.example.com"}"#
    static let noUV = #"{"device": "dv0123456789abcdef", "aaid": "FFFF#0002", "public_key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyPx0GgOkmMqZi0UBaSHHh_ntUcBe7f088qXLw6J3wrItNmgkBkbT2Ni8qEqzul7SuZhs_pk7xK1w0R_kD96xgQ", "authenticator_data": "qDtPFnfLoc99F2lGN__-H1IH5-fHAu8WpmVVUVwr07ABAAAAAQ", "client_data_json": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiTWxsZ2I2YzBfSDJVYnI1bWFjRW8zcHg3VDg2dnlhWnlrYnBhQzdBcUVybyIsIm9yaWdpbiI6Imh0dHBzOi8vb3RwLmV4YW1wbGUuY29tIiwiY3Jvc3NPcmlnaW4iOmZhbHNlfQ", "signature": "MEUCIG5_F899yVF5gTEUcFn5lqt6dLwnTC0iNCHJYxiwvwHBAiEAqExhmrp2arVVPnXI20GPdp6oS_t405p6v8rCgC2hwL8", "origin": "https://otp.example.com"}"#
    static let elsewhere = #"{"device": "dv0123456789abcdef", "aaid": "FFFF#0002", "public_key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyPx0GgOkmMqZi0UBaSHHh_ntUcBe7f088qXLw6J3wrItNmgkBkbT2Ni8qEqzul7SuZhs_pk7xK1w0R_kD96xgQ", "authenticator_data": "nBgN4M1pnueIl8R8_bPn7h11kG4xt3RqR0fepTaQmDcFAAAAAQ", "client_data_json": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiTWxsZ2I2YzBfSDJVYnI1bWFjRW8zcHg3VDg2dnlhWnlrYnBhQzdBcUVybyIsIm9yaWdpbiI6Imh0dHBzOi8vZXZpbC5leGFtcGxlIiwiY3Jvc3NPcmlnaW4iOmZhbHNlfQ", "signature": "MEUCIDTXiEbbsD2IrfRMXQ5HsiJ0N7H2L46uokEKg1jGpktkAiEAktaJlbMovS3dH_E4BJi0Lf9O4UFhvNGOFNIogoVnfh8", "origin": "https://evil.example"}"#
    static let withoutOrigin = #"{"device": "dv0123456789abcdef", "aaid": "FFFF#0002", "public_key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyPx0GgOkmMqZi0UBaSHHh_ntUcBe7f088qXLw6J3wrItNmgkBkbT2Ni8qEqzul7SuZhs_pk7xK1w0R_kD96xgQ", "authenticator_data": "qDtPFnfLoc99F2lGN__-H1IH5-fHAu8WpmVVUVwr07AFAAAAAQ", "client_data_json": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiTWxsZ2I2YzBfSDJVYnI1bWFjRW8zcHg3VDg2dnlhWnlrYnBhQzdBcUVybyIsIm9yaWdpbiI6Imh0dHBzOi8vb3RwLmV4YW1wbGUuY29tIiwiY3Jvc3NPcmlnaW4iOmZhbHNlfQ", "signature": "MEQCIHGe8yS6GYqeGIS3jiG042I3h69FjAd7-rxH9C76R29aAiB3nmxA74O9TFmW1YiLf4gylkn4TX17WsGCFJxJDeI2dw"}"#
    static let asAuthenticator = #"{"device": "dv0123456789abcdef", "aaid": "FFFF#0001", "public_key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyPx0GgOkmMqZi0UBaSHHh_ntUcBe7f088qXLw6J3wrItNmgkBkbT2Ni8qEqzul7SuZhs_pk7xK1w0R_kD96xgQ", "authenticator_data": "qDtPFnfLoc99F2lGN__-H1IH5-fHAu8WpmVVUVwr07AFAAAAAQ", "client_data_json": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiTWxsZ2I2YzBfSDJVYnI1bWFjRW8zcHg3VDg2dnlhWnlrYnBhQzdBcUVybyIsIm9yaWdpbiI6Imh0dHBzOi8vb3RwLmV4YW1wbGUuY29tIiwiY3Jvc3NPcmlnaW4iOmZhbHNlfQ", "signature": "MEQCIHGe8yS6GYqeGIS3jiG042I3h69FjAd7-rxH9C76R29aAiB3nmxA74O9TFmW1YiLf4gylkn4TX17WsGCFJxJDeI2dw", "origin": "https://otp.example.com"}"#

    static let request = PushApprovalCheck.Request(id: "pr" + String(repeating: "0a", count: 16), user: "alice", host: "web1",
                                                   context: PushContext(service: "sshd", remoteAddress: "192.0.2.7", tty: "ssh", command: ""),
                                                   challenge: PushChallenge(nonce: String(repeating: "BwcH", count: 10) + "Bwc", number: "492817"),
                                                   expires: 1_795_673_348)

    static func check(_ text: String, webOrigin: String? = nil, number: String = "492817") throws -> PushApprovalCheck.Result {
        let approval = try #require(JSONReader.parse(Array(text.utf8)).flatMap(DeviceApproval.init))
        var request = Self.request
        if number != "492817" {
            request = PushApprovalCheck.Request(id: request.id, user: request.user, host: request.host, context: request.context,
                                                challenge: PushChallenge(nonce: request.challenge.nonce, number: number), expires: request.expires)
        }
        return PushApprovalCheck(deviceCA: nil, requireUserVerification: false, webOrigin: webOrigin).check(approval, for: request)
    }

    @Test("accepted with the right number at the origin it names (and at web_origin); refused otherwise, UV always required")
    func webApprovals() throws {
        #expect(try Self.check(Self.good) == .accepted(userVerified: true))
        #expect(try Self.check(Self.good, webOrigin: "https://otp.example.com") == .accepted(userVerified: true))
        #expect(try Self.check(Self.good, webOrigin: "https://otp.example.net") == .refused(reason: "wrong_origin"))
        #expect(try Self.check(Self.good, number: "492818") == .refused(reason: "wrong_challenge"))
        #expect(try Self.check(Self.noUV) == .refused(reason: "not_verified"), "UV is required for passkeys even with device_uv=optional")
        #expect(try Self.check(Self.elsewhere, webOrigin: "https://otp.example.com") == .refused(reason: "wrong_origin"))
        #expect(try Self.check(Self.withoutOrigin) == .refused(reason: "wrong_origin"))
        #expect(try Self.check(Self.asAuthenticator) == .refused(reason: "wrong_type"), "a passkey's assertion is not an authenticator's")
    }

    @Test("push_web=: passkey approvals refused by default with device_ca= (the validator serves the page), taken with allow")
    func pushWebOption() throws {
        let approval = try #require(JSONReader.parse(Array(Self.good.utf8)).flatMap(DeviceApproval.init))
        let refusing = PushApprovalCheck(deviceCA: nil, requireUserVerification: false, webOrigin: nil, acceptsWebApprovals: false)
        #expect(refusing.check(approval, for: Self.request) == .refused(reason: "web_approval_not_allowed"))

        var settings = Settings()
        #expect(settings.remote.acceptsWebApprovals, "no device_ca: the validator is trusted anyway")
        try settings.apply(key: "device_ca", value: "/etc/securotp/device-ca.pem", origin: .argument)
        #expect(!settings.remote.acceptsWebApprovals, "device_ca= without push_web=allow refuses passkeys")
        try settings.apply(key: "push_web", value: "allow", origin: .argument)
        #expect(settings.remote.acceptsWebApprovals)
        try settings.apply(key: "push_web", value: "deny", origin: .argument)
        #expect(!settings.remote.acceptsWebApprovals)
        #expect(throws: StoreError.self) { try settings.apply(key: "push_web", value: "yes", origin: .argument) }
    }

    @Test("web_origin= takes an https origin (http only to localhost), nothing else")
    func webOriginOption() throws {
        for good in ["https://otp.example.com", "https://otp.example.com:8443", "http://localhost:8080"] {
            #expect(ClientData.webRPID(origin: good) != nil, "\(good)")
        }
        #expect(ClientData.webRPID(origin: "https://otp.example.com:8443") == "otp.example.com")
        for bad in ["http://otp.example.com", "https://OTP.example.com", "https://otp.example.com/", "https://192.0.2.1", "https://", "otp.example.com",
                    "https://otp.example.com:", "https://otp.example.com:08443", "https://a b", "https://-otp.example.com", "https://otp.example.com:65536",
                    "http://otp.localhost:8080"] {
            #expect(ClientData.webRPID(origin: bad) == nil, "\(bad)")
        }
        var settings = Settings()
        try settings.apply(key: "web_origin", value: "https://otp.example.com", origin: .argument)
        #expect(settings.remote.webOrigin == "https://otp.example.com")
        #expect(throws: StoreError.self) { try settings.apply(key: "web_origin", value: "http://otp.example.com", origin: .argument) }
    }
}
