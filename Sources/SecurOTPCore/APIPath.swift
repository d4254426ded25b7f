/// A path of securotpd's HTTP API (docs/api/openapi.yaml), written once: securotpd registers
/// its routes from these, and every client — the module, `securotp --server`, the
/// authenticator, `securotp doctor` — calls them. `APIPathTests` checks the list against the
/// document and the routes, and that no other source file spells a `/v1/` path.
///
/// A template names its parameters as OpenAPI does (`/v1/users/{user}/tokens`); clients fill
/// them, percent-encoded, and the server's router writes them as `:user`.
public struct APIPath: Hashable, Sendable, CustomStringConvertible {
    public let template: String

    public init(_ template: String) { self.template = template }

    public var description: String { template }

    // Anyone: load balancers, monitors, the phone page's files.
    public static var health: APIPath { APIPath("/v1/health") }
    public static var metrics: APIPath { APIPath("/metrics") }
    public static var app: APIPath { APIPath("/app") }
    public static var appFile: APIPath { APIPath("/app/{file}") }

    // Hosts (a host credential).
    public static var preflight: APIPath { APIPath("/v1/preflight") }
    public static var verify: APIPath { APIPath("/v1/verify") }
    public static var verifyAnswer: APIPath { APIPath("/v1/verify/answer") }
    public static var fidoChallenge: APIPath { APIPath("/v1/fido/challenge") }
    public static var fidoVerify: APIPath { APIPath("/v1/fido/verify") }
    public static var push: APIPath { APIPath("/v1/push") }
    public static var pushWait: APIPath { APIPath("/v1/push/wait") }
    public static var pushResult: APIPath { APIPath("/v1/push/result") }
    public static var pushCancel: APIPath { APIPath("/v1/push/cancel") }

    // Admins (an admin credential).
    public static var tokens: APIPath { APIPath("/v1/tokens") }
    public static var userTokens: APIPath { APIPath("/v1/users/{user}/tokens") }
    public static var userTokensImport: APIPath { APIPath("/v1/users/{user}/tokens/import") }
    public static var userFido: APIPath { APIPath("/v1/users/{user}/fido") }
    public static var policies: APIPath { APIPath("/v1/policies") }
    public static var policy: APIPath { APIPath("/v1/policies/{subject}") }
    public static var userToken: APIPath { APIPath("/v1/users/{user}/tokens/{serial}") }
    public static var userTokenPIN: APIPath { APIPath("/v1/users/{user}/tokens/{serial}/pin") }
    public static var userTokenPINRequire: APIPath { APIPath("/v1/users/{user}/tokens/{serial}/pin/require") }
    public static var userTokenResync: APIPath { APIPath("/v1/users/{user}/tokens/{serial}/resync") }
    public static var userUnlock: APIPath { APIPath("/v1/users/{user}/unlock") }
    public static var userRecoveryCodes: APIPath { APIPath("/v1/users/{user}/recovery-codes") }
    public static var userBindingID: APIPath { APIPath("/v1/users/{user}/binding-id") }
    public static var status: APIPath { APIPath("/v1/status") }
    public static var hosts: APIPath { APIPath("/v1/hosts") }
    public static var host: APIPath { APIPath("/v1/hosts/{name}") }
    public static var admins: APIPath { APIPath("/v1/admins") }
    public static var admin: APIPath { APIPath("/v1/admins/{name}") }
    public static var audit: APIPath { APIPath("/v1/audit") }
    public static var devices: APIPath { APIPath("/v1/devices") }
    public static var userDevices: APIPath { APIPath("/v1/users/{user}/devices") }
    public static var userDevice: APIPath { APIPath("/v1/users/{user}/devices/{device}") }
    public static var userDeviceUnlockCode: APIPath { APIPath("/v1/users/{user}/devices/{device}/unlock-code") }
    public static var userDeviceCertificate: APIPath { APIPath("/v1/users/{user}/devices/{device}/certificate") }
    public static var userPushUnblock: APIPath { APIPath("/v1/users/{user}/push/unblock") }

    // Devices: activation (the code is the credential), then a device credential or a phone
    // page's session; the phone page's enrollment and sessions (a passkey).
    public static var devicesActivate: APIPath { APIPath("/v1/devices/activate") }
    public static var deviceRequests: APIPath { APIPath("/v1/device/requests") }
    public static var deviceAnswer: APIPath { APIPath("/v1/device/answer") }
    public static var deviceBlocked: APIPath { APIPath("/v1/device/blocked") }
    public static var deviceUnlock: APIPath { APIPath("/v1/device/unlock") }
    public static var deviceRemove: APIPath { APIPath("/v1/device/remove") }
    public static var webEnrollOptions: APIPath { APIPath("/v1/web/enroll/options") }
    public static var webEnroll: APIPath { APIPath("/v1/web/enroll") }
    public static var webSessionOptions: APIPath { APIPath("/v1/web/session/options") }
    public static var webSession: APIPath { APIPath("/v1/web/session") }

    /// Every path, in the document's order.
    public static var all: [APIPath] {
        [health, metrics, app, appFile, preflight, verify, verifyAnswer, fidoChallenge, fidoVerify, tokens, userTokens, userTokensImport,
         userFido, policies, policy, userToken, userTokenPIN, userTokenPINRequire, userTokenResync, userUnlock, userRecoveryCodes,
         userBindingID, status, hosts, host, admins, admin, audit, push, pushWait, pushResult, pushCancel, devicesActivate,
         webEnrollOptions, webEnroll, webSessionOptions, webSession, deviceRequests, deviceAnswer, deviceBlocked, deviceUnlock,
         deviceRemove, devices, userDevices, userDevice, userDeviceUnlockCode, userDeviceCertificate, userPushUnblock]
    }
}
