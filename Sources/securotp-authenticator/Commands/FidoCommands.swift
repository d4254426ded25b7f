import ArgumentParser
import Glibc
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPEngine
import SecurOTPStore

/// `securotp-authenticator fido register`: the user's side of FIDO enrolment (docs/fido.md,
/// docs/authenticator.md). No store is involved: the credential lives on the key, and the line
/// goes to an administrator, who imports it with `securotp import USER 'LINE'`.
struct FidoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fido",
        abstract: "FIDO2/U2F security keys: register one attached to this machine for your login.",
        discussion: "Example: securotp-authenticator fido register --origin pam://bastion.example.com",
        subcommands: [FidoRegister.self]
    )
}

struct FidoRegister: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Make a credential on the security key attached here and print the pam_u2f line for your administrator.",
        discussion: """
        Touch the key when it blinks. Prints one line, user:KH,PK,type,attributes, as pamu2fcfg does; give it to your administrator, who runs: securotp import USER 'LINE'. The line holds no secret (a key handle and a public key). The credential is made for ORIGIN, which must be the origin of the host you will log in to (default pam://HOSTNAME of this machine; securotp fido enroll and pam_securotp use the same default on theirs).

        Examples:
          securotp-authenticator fido register
          securotp-authenticator fido register --origin pam://bastion.example.com --pin
          securotp-authenticator fido register --type rs256 --resident
        """
    )

    @Option(help: "The RP ID: the origin of the host you log in to (default: pam://HOSTNAME of this machine).") var origin: String?
    @Option(help: "es256 (default), eddsa (Ed25519) or rs256 (RSA-2048, PKCS#1 v1.5).") var type: String = "es256"
    @Option(help: "The user name in the line (default: your login name).") var user: String?
    @Flag(help: "The key has a PIN: ask it now, and at every login (+pin).") var pin = false
    @Flag(help: "Ask the key to verify you (built-in UV) at every login (+verification).") var uv = false
    @Flag(help: "Make a resident (discoverable) credential, kept on the key (key handle * in the line, as pamu2fcfg -r).") var resident = false
    @Flag(name: .customLong("no-presence"), help: "Do not require a touch at login (pamu2fcfg -P).") var noPresence = false

    func run() throws {
        let name = try user ?? Self.loginName()
        do {
            try Store.validate(user: name)
        } catch {
            throw CLIError.usage("--user: \(error.message)")
        }
        var settings = FidoSettings()
        if let origin {
            guard FidoSettings.validOrigin(origin) else { throw CLIError.usage("--origin \(TerminalText.quoted(origin)) is not a usable RP ID") }
            settings.origin = origin
        }
        var enrollment = FidoKeyEnrollment(user: name, origin: settings.effectiveOrigin)
        enrollment.type = try FidoKeyEnrollment.keyType(type)
        enrollment.presence = !noPresence
        enrollment.verification = uv
        enrollment.resident = resident
        enrollment.pin = pin ? try Terminal.secretLine(prompt: "PIN of the security key: ", what: "PIN") : nil
        defer { wipe(&enrollment.pin) }
        if Terminal.isInteractive { standardError("Touch the security key (origin \(enrollment.origin)).\n") }
        let credential = try enrollment.make()
        print(FidoCredential.u2fLine(user: name, [credential]))
        standardError("Give this line to your administrator: securotp import \(name) 'LINE' (origin \(enrollment.origin))\n")
    }

    /// The invoking user's name (getpwuid: not $USER, which anyone can set).
    static func loginName() throws -> String {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else {
            throw CLIError(.noSuchSystemUser, "cannot find your user name (uid \(getuid())); give it with --user")
        }
        return String(cString: name)
    }
}
